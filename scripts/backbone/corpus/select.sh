#!/usr/bin/env bash
# Writes scripts/backbone/corpus/packages.txt, the pinned package list the corpus builder downloads:
# one "group package version" line each. Run once (after `apt-get update`) to (re)make the list; the
# build itself only reads packages.txt, so it is reproducible from the committed list.
#
#   bash scripts/backbone/corpus/select.sh [SEED]        # SEED default 14
#
# The list: a fixed core of documentation and language sources (below), every librust-*-dev crate
# (feature metapackages librust-foo+bar-dev hold no source and are left out), and seeded samples of the
# architecture-independent golang-*-dev, python3-* and node-* packages. A sample takes the N names
# with the smallest sha1("SEED:name"), so it is a pure function of the seed and the names available.
set -euo pipefail
SEED="${1:-14}"
N_GO="${N_GO:-450}"
N_PY="${N_PY:-450}"
N_NODE="${N_NODE:-350}"
HERE="$(cd "$(dirname "$0")" && pwd)"
OUT="$HERE/packages.txt"

# group package: the fixed core
CORE="
python python3.11-doc
python libpython3.11-stdlib
python libpython3.11-minimal
python python-django-doc
python python3-django
rust rust-src
rust rust-doc
go golang-1.19-src
node nodejs-doc
man manpages
man manpages-dev
docs perl-doc
docs perl-modules-5.36
docs git-doc
docs bash-doc
docs glibc-doc
docs binutils-doc
docs postgresql-doc-15
docs sqlite3-doc
docs cmake-data
docs ruby3.1-doc
"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# Candidate version and architecture of every package name (one apt-cache call per batch of names).
avail() { # names on stdin -> "name version arch" lines
  xargs -r apt-cache show --no-all-versions 2>/dev/null |
    awk '/^Package:/{p=$2} /^Version:/{v=$2} /^Architecture:/{a=$2} /^$/{if(p!="")print p, v, a; p=""}' | sort -u -k1,1
}
sample() { # group N < names -> N names with the smallest sha1(SEED:name)
  local g="$1" n="$2"
  while read -r name; do
    printf '%s %s\n' "$(printf '%s:%s' "$SEED" "$name" | sha1sum | cut -c1-40)" "$name"
  done | sort | awk -v g="$g" -v n="$n" 'NR<=n{print g, $2}'
}

apt-cache pkgnames librust- | grep -E '^librust-[^+]*-dev$' | sort > "$tmp/rust"
apt-cache pkgnames golang- | grep -E -- '-dev$' | sort | avail | awk '$3=="all"{print $1}' > "$tmp/go"
apt-cache pkgnames python3- | grep -v -E -- '-(dbg|doc)$' | sort | avail | awk '$3=="all"{print $1}' > "$tmp/py"
apt-cache pkgnames node- | sort | avail | awk '$3=="all"{print $1}' > "$tmp/node"

{
  echo "$CORE" | awk 'NF==2'
  awk '{print "rust", $1}' "$tmp/rust"
  sample go "$N_GO" < "$tmp/go"
  sample python "$N_PY" < "$tmp/py"
  sample node "$N_NODE" < "$tmp/node"
} | awk '!seen[$2]++' > "$tmp/list"

cut -d' ' -f2 "$tmp/list" | avail > "$tmp/versions"
{
  echo "# group package version -- written by select.sh (seed $SEED, go $N_GO, python $N_PY, node $N_NODE) on $(date -u +%F)"
  echo "# from Debian $(. /etc/os-release && echo "$VERSION_CODENAME") main (deb.debian.org, bookworm + bookworm-updates + bookworm-security)"
  sort -k2,2 "$tmp/list" | join -1 2 -2 1 - "$tmp/versions" | awk '{print $2, $1, $3}' | sort -k1,1 -k2,2
} > "$OUT"
echo "$(grep -vc '^#' "$OUT") packages -> $OUT"
awk '!/^#/{n[$1]++} END{for (g in n) print "  " g, n[g]}' "$OUT" | sort
