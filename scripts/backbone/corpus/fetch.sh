#!/usr/bin/env bash
# Downloads the pinned packages of packages.txt (apt-get download pkg=version, nothing installed) into
# CACHE/debs and unpacks each with dpkg-deb -x into CACHE/root/<package>/. Writes CACHE/manifest.tsv:
# group, package, version requested, version got, sha256 of the .deb.
#
#   bash scripts/backbone/corpus/fetch.sh CACHE
#
# Needs: Debian/Ubuntu with apt-get, dpkg-deb, a reachable Debian mirror for the release the list was
# made from (bookworm) and `apt-get update` done. A pinned version the mirror no longer has is an error,
# unless CORPUS_ALLOW_NEWER=1: then the candidate version is taken and the manifest says so.
set -euo pipefail
CACHE="${1:?usage: fetch.sh CACHE}"
HERE="$(cd "$(dirname "$0")" && pwd)"
LIST="${CORPUS_PACKAGES:-$HERE/packages.txt}"
mkdir -p "$CACHE/debs" "$CACHE/root"
CACHE="$(cd "$CACHE" && pwd)"
APT=(apt-get -q -o APT::Sandbox::User=root download)

grep -v '^#' "$LIST" | awk 'NF==3' > "$CACHE/list.txt"
# Download what is missing, in batches (one failure of a batch falls back to one package at a time).
missing=()
while read -r g p v; do
  ls "$CACHE/debs/${p}_"*.deb >/dev/null 2>&1 || missing+=("$p=$v")
done < "$CACHE/list.txt"
echo "fetch: ${#missing[@]} of $(wc -l < "$CACHE/list.txt") packages to download"
cd "$CACHE/debs"
for ((i = 0; i < ${#missing[@]}; i += 200)); do
  batch=("${missing[@]:i:200}")
  if ! "${APT[@]}" "${batch[@]}" > /dev/null 2> "$CACHE/apt-err.txt"; then
    for pv in "${batch[@]}"; do
      p="${pv%%=*}"
      ls "$CACHE/debs/${p}_"*.deb >/dev/null 2>&1 && continue
      if ! "${APT[@]}" "$pv" > /dev/null 2>> "$CACHE/apt-err.txt"; then
        if [ "${CORPUS_ALLOW_NEWER:-0}" = 1 ]; then
          echo "fetch: $pv not on the mirror, taking the candidate" >&2
          "${APT[@]}" "$p" > /dev/null
        else
          echo "fetch: $pv not on the mirror (set CORPUS_ALLOW_NEWER=1 to take the candidate)" >&2
          exit 1
        fi
      fi
    done
  fi
done

# Unpack (each package into its own tree) and write the manifest.
printf 'group\tpackage\tversion_pinned\tversion\tsha256\n' > "$CACHE/manifest.tsv.tmp"
while read -r g p v; do
  deb="$(ls "$CACHE/debs/${p}_"*.deb | sort | tail -n 1)"
  got="$(dpkg-deb -f "$deb" Version)"
  if [ ! -e "$CACHE/root/$p/.done" ] || [ "$(cat "$CACHE/root/$p/.done")" != "$got" ]; then
    rm -rf "$CACHE/root/$p"
    mkdir -p "$CACHE/root/$p"
    dpkg-deb -x "$deb" "$CACHE/root/$p"
    echo "$got" > "$CACHE/root/$p/.done"
  fi
  printf '%s\t%s\t%s\t%s\t%s\n' "$g" "$p" "$v" "$got" "$(sha256sum "$deb" | cut -c1-64)" >> "$CACHE/manifest.tsv.tmp"
done < "$CACHE/list.txt"
mv "$CACHE/manifest.tsv.tmp" "$CACHE/manifest.tsv"
echo "fetch: $(($(wc -l < "$CACHE/manifest.tsv") - 1)) packages unpacked under $CACHE/root ($(du -sh "$CACHE/root" | cut -f1))"
