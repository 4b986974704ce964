#!/usr/bin/env bash
# Packs this machine's PostgreSQL 15 server (the Debian 12 package) into one
# tarball that runs on a machine without PostgreSQL (the GPU host: Ubuntu
# 24.04, no network), for scripts/with-postgres.sh there.
#
#   scripts/postgres-bundle.sh DIR [LIB_DIR]   # writes DIR/postgres.tar.xz
#
# LIB_DIR (e.g. bundle/lib of scripts/gpu-bundle.sh, which travels anyway):
# the libraries found there byte for byte are left out of the tarball (4 MiB
# of its 11), their names listed in deps/FROM-LIB-DIR; whoever unpacks it
# copies them back into deps/ from that directory (bench/ingest-host.sh does
# for bundle/lib).
#
# The tarball holds postgresql-15/ with Debian's relative layout, which
# PostgreSQL's relocatable paths need (it finds its share and lib dirs
# relative to its bin dir, wherever the tree is unpacked):
#   postgresql-15/usr/lib/postgresql/15/bin    initdb, pg_ctl, postgres, psql
#   postgresql-15/usr/lib/postgresql/15/lib    plpgsql, dict_snowball and the
#                                              encoding conversions (initdb
#                                              and clients need them)
#   postgresql-15/usr/lib/postgresql/15/deps   the shared libraries those link
#                                              (ldd), but glibc, libstdc++,
#                                              libgcc_s and the loader
#   postgresql-15/usr/share/postgresql/15      share files, without man pages,
#                                              contrib and extensions other
#                                              than plpgsql
# Left out: the other client tools, other extensions, JIT (llvmjit: the
# server runs without it). Binaries and libraries are stripped.
#
# ICU's data (libicudata, 30 MiB, most of the tarball) is cut down to what
# initdb's import of the ICU collations reads: the locale list, the root
# collation and English display names. Every ICU collation still exists and
# sorts by the root (CLDR) order, but those of languages that tailor it (sv,
# da, ...) sort like the root one; PostgreSQL links ICU but uses it only for
# ICU collations, which the tunefleet database (no locale, C collation) never
# uses. Needs icupkg and genccode (icu-devtools) and a C compiler;
# ICU_FULL=1 (or their absence) ships the full data instead.
#
# Then, on the other machine:
#   mkdir -p /tmp/pg && tar -xJf postgres.tar.xz -C /tmp/pg && chmod 755 /tmp/pg
#   (made with LIB_DIR: first copy the files deps/FROM-LIB-DIR lists from
#   LIB_DIR into postgresql-15/usr/lib/postgresql/15/deps)
#   PG_BIN=/tmp/pg/postgresql-15/usr/lib/postgresql/15/bin scripts/with-postgres.sh CMD
# (with-postgres.sh finds deps/ next to bin/ and puts it on the PostgreSQL
# binaries' LD_LIBRARY_PATH.) Prints the tarball's size.
set -euo pipefail

[[ $# -eq 1 || $# -eq 2 ]] || { echo "usage: $0 DIR [LIB_DIR]" >&2; exit 2; }
out=$(realpath -m "$1")
shared="${2:-}"
src_lib=/usr/lib/postgresql/15
src_share=/usr/share/postgresql/15
[[ -x "${src_lib}/bin/postgres" ]] || { echo "postgres-bundle: no ${src_lib}/bin/postgres (install postgresql-15)" >&2; exit 1; }

stage=$(mktemp -d "${TMPDIR:-/tmp}/postgres-bundle.XXXXXX")
trap 'rm -rf "${stage}"' EXIT
top="${stage}/postgresql-15"
lib="${top}${src_lib}"
share="${top}${src_share}"
mkdir -p "${lib}/bin" "${lib}/lib" "${lib}/deps" "${share}/extension"

# The four programs that with-postgres.sh runs; strip drops what symbols a
# debugger would use (the dynamic symbols that modules link against stay).
binaries=(initdb pg_ctl postgres psql)
for name in "${binaries[@]}"; do
  cp -L "${src_lib}/bin/${name}" "${lib}/bin/${name}"
  strip "${lib}/bin/${name}"
done

# Modules: initdb loads plpgsql (CREATE EXTENSION plpgsql) and dict_snowball
# (snowball_create.sql); the conversions serve clients in other encodings.
modules=(plpgsql.so dict_snowball.so)
for path in "${src_lib}"/lib/*_and_*.so; do modules+=("$(basename "${path}")"); done
for name in "${modules[@]}"; do
  cp -L "${src_lib}/lib/${name}" "${lib}/lib/${name}"
  strip --strip-unneeded "${lib}/lib/${name}"
done

# Every share file but the man pages, contrib/ (sepgsql) and the extensions'
# scripts; plpgsql's control and script stay (initdb creates it).
for path in "${src_share}"/*; do
  case "$(basename "${path}")" in
    man|contrib|extension) ;;
    *) cp -R -L "${path}" "${share}/" ;;
  esac
done
cp -L "${src_share}"/extension/plpgsql* "${share}/extension/"

# The shared libraries the binaries and modules link, as ldd resolves them
# here; the host's glibc, C++ runtime and loader are used instead. Those
# that LIB_DIR holds, as they are here or stripped, are only named.
system_lib='^(linux-vdso|ld-linux|libc\.|libm\.|libmvec|libpthread|libdl\.|librt\.|libresolv|libutil|libstdc\+\+|libgcc_s)'
for file in "${binaries[@]/#/${src_lib}/bin/}" "${modules[@]/#/${src_lib}/lib/}"; do
  ldd "${file}" | awk '/=> \// {print $1, $3}' | while read -r name path; do
    [[ "${name}" =~ ${system_lib} ]] && continue
    if [[ -n "${shared}" ]] && cmp -s "${path}" "${shared}/${name}"; then
      echo "${name}" >>"${lib}/deps/FROM-LIB-DIR"
    elif [[ ! -f "${lib}/deps/${name}" ]]; then
      cp -L "${path}" "${lib}/deps/${name}"
      strip --strip-unneeded "${lib}/deps/${name}"
      if [[ -n "${shared}" ]] && cmp -s "${lib}/deps/${name}" "${shared}/${name}"; then
        rm "${lib}/deps/${name}"
        echo "${name}" >>"${lib}/deps/FROM-LIB-DIR"
      fi
    fi
  done
done
if [[ -f "${lib}/deps/FROM-LIB-DIR" ]]; then
  sort -u -o "${lib}/deps/FROM-LIB-DIR" "${lib}/deps/FROM-LIB-DIR"
fi

# trim_icu_data LIB: replaces LIB (libicudata.so.N) with a library of the same
# name and data symbol (icudtN_dat) that holds only the items named below.
trim_icu_data() {
  local file=$1 version work value size index address offset
  version=${file##*.so.}
  work="${stage}/icu"
  mkdir -p "${work}/in" "${work}/out"
  # The data is one symbol: its address and size, then where its section
  # lies in the file, give its bytes.
  read -r value size index < <(readelf -sW "${file}" \
    | awk -v sym="icudt${version}_dat" '$8 == sym && $7 != "UND" {print $2, $3, $7; exit}')
  read -r address offset < <(readelf -SW "${file}" | sed 's/\[ */[/' \
    | awk -v n="[${index}]" '$1 == n {print $4, $5; exit}')
  dd if="${file}" of="${work}/in/icudt${version}l.dat" iflag=skip_bytes,count_bytes bs=1M \
    skip=$((0x${value} - 0x${address} + 0x${offset})) count=$((size)) status=none
  # Kept: the locale list and root bundles, the root collation (UCA data),
  # English language and region names, likely subtags and aliases (language
  # tags), converter aliases and normalization data.
  icupkg -l "${work}/in/icudt${version}l.dat" >"${work}/all.txt"
  grep -vxE '(lang|region|coll)/(root|en|res_index|pool)\.res|coll/ucadata\.icu|[a-z0-9_]+\.nrm|cnvalias\.icu|(root|en|pool|res_index|likelySubtags|langInfo|keyTypeData|supplementalData|metadata|icuver|icustd)\.res' \
    "${work}/all.txt" >"${work}/remove.txt"
  icupkg -r "${work}/remove.txt" "${work}/in/icudt${version}l.dat" "${work}/out/icudt${version}l.dat"
  genccode -q -a gcc -e "icudt${version}" -d "${work}/out" "${work}/out/icudt${version}l.dat"
  cc -shared -nostdlib -Wl,-soname,"libicudata.so.${version}" -o "${file}" \
    "${work}/out/icudt${version}l_dat.S"
  echo "postgres-bundle: ICU data cut to $(($(wc -l <"${work}/all.txt") - $(wc -l <"${work}/remove.txt")))" \
    "of $(wc -l <"${work}/all.txt") items, $(($(stat -c %s "${file}") / 1024)) KiB"
}

icu=$(find "${lib}/deps" -name 'libicudata.so.*' | head -n 1)
if [[ -n "${icu}" && "${ICU_FULL:-0}" != 1 ]]; then
  if command -v icupkg >/dev/null && command -v genccode >/dev/null && command -v cc >/dev/null; then
    trim_icu_data "${icu}"
  else
    echo "postgres-bundle: no icupkg/genccode/cc: ICU's full data is shipped" >&2
  fi
fi

# Readable by all: as root, with-postgres.sh runs the server as another user.
chmod -R u=rwX,go=rX "${top}"

# xz -9 behind its x86 filter (5% smaller: most of the tarball is machine
# code); any xz, and tar -J, unpacks it.
mkdir -p "${out}"
tar -C "${stage}" --owner=0 --group=0 --numeric-owner -cf - postgresql-15 \
  | xz --x86 --lzma2=preset=9 -T1 >"${out}/postgres.tar.xz.tmp"
mv "${out}/postgres.tar.xz.tmp" "${out}/postgres.tar.xz"

unpacked=$(du -sb "${top}" | cut -f1)
size=$(stat -c %s "${out}/postgres.tar.xz")
left=0
[[ -f "${lib}/deps/FROM-LIB-DIR" ]] && left=$(wc -l <"${lib}/deps/FROM-LIB-DIR")
echo "postgres-bundle: ${out}/postgres.tar.xz: $("${src_lib}/bin/postgres" --version)," \
  "$(find "${lib}/deps" -name '*.so*' | wc -l) libraries (${left} more left to ${shared:-no LIB_DIR})," \
  "$((unpacked / 1024 / 1024)) MiB unpacked," \
  "$(awk -v b="${size}" 'BEGIN { printf "%.1f", b / 1048576 }') MiB compressed"
