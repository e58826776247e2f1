const fs=require("fs");
for (const f of process.argv.slice(2)) {
  const rows=fs.readFileSync(f,"utf8").trim().split("\n").map(l=>l.split("\t"));
  const agg={};
  for (const [lib,,part,method,a,b,c] of rows) {
    const shape=lib.split("-")[0]; const k=`${shape}|${method}`; agg[k]??={inFitRight:0,inFitN:0,inHeldRight:0,inHeldDecl:0,inHeldN:0,offHeldThrough:0,offHeldN:0,offFitThrough:0,offFitN:0};
    const g=agg[k]; const [r,d,w]=[+a,+b,+c];
    if(part==="in-held"){g.inHeldRight+=r;g.inHeldDecl+=d;g.inHeldN+=r+d+w;}
    if(part==="in-fit"){g.inFitRight+=r;g.inFitN+=r+d+w;}
    if(part==="off-held"){g.offHeldThrough+=w;g.offHeldN+=r+d+w;}
    if(part==="off-fit"){g.offFitThrough+=w;g.offFitN+=r+d+w;}
  }
  console.log(f);
  for (const [k,g] of Object.entries(agg)) console.log(k.padEnd(45), `in-fit right ${g.inFitRight}/${g.inFitN}  in-held right ${g.inHeldRight} declined ${g.inHeldDecl}/${g.inHeldN}  off-held through ${g.offHeldThrough}/${g.offHeldN}  off-fit through ${g.offFitThrough}/${g.offFitN}`);
}
