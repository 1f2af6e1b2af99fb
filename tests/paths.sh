#!/usr/bin/env bash
# Every path a comment or a doc cites exists: a reader sent to a file that has since moved, or
# to a file outside the repository, is lost. Scans the comments of sources, scripts and build
# files and the text of Markdown files for words that start with one of the repository's
# top-level folders (store/logs.c, tests/unit/, ../docs/cli.md) and checks each against the tree:
# as written, from the citing file's folder, or as a module name (store/logs: store/logs.c or
# .h) or a program built in that folder (tests/kube/testserver).
cd "$(dirname "$0")/.."
shopt -s extglob
# The top-level folders, and shared/: the sessions' notes beside the repository, which readers
# of the repository do not have.
tops=$( (git ls-files | sed -n 's|^\([^/]*\)/.*|\1|p'; echo shared) | sort -u | sed 's/\./\\./g' |
    paste -sd'|')
root=$(pwd -P)

# comments FILE: the comment text of FILE, each line prefixed with its number.
comments() {
    case $1 in
    *.md) awk '{ print NR ": " $0 }' "$1" ;;
    *.c | *.h | *.js | *.css | *.lua)
        # /* ... */ blocks and // to the end of the line (not the // of a URL).
        awk '{
            line = $0; out = ""
            while (line != "") {
                if (inblock) {
                    e = index(line, "*/")
                    if (!e) { out = out " " line; line = "" } else { out = out " " substr(line, 1, e - 1); line = substr(line, e + 2); inblock = 0 }
                } else {
                    b = index(line, "/*"); s = match(line, /(^|[ \t;])\/\/ /)
                    if (s && (!b || s < b)) { out = out " " substr(line, s); line = "" }
                    else if (b) { inblock = 1; line = substr(line, b + 2) }
                    else line = ""
                }
            }
            if (out != "") print NR ": " out
        }' "$1" ;;
    *) awk 'match($0, /(^|[ \t])#/) { print NR ": " substr($0, RSTART) }' "$1" ;;
    esac
}

# known PATH FILE: PATH names something in the tree.
known() {
    local p=${1%/.h} dir
    dir=$(dirname "$2")
    for c in "$p" "$dir/$p"; do
        [[ $(realpath -m "$c") == "$root"/* ]] || continue # outside the repository
        [ -e "$c" ] || [ -e "$c.c" ] || [ -e "$c.h" ] && return 0
        grep -qs "add_executable($(basename "$c")[ )]" "$(dirname "$c")/CMakeLists.txt" && return 0
    done
    grep -rqs --include=CMakeLists.txt "add_test(NAME $p[ )]" tests && return 0 # ctest: web/browser
    return 1
}

fails=0 checked=0
files=$(git ls-files -- '*.c' '*.h' '*.sh' '*.md' '*.cmake' '*CMakeLists.txt' Makefile Dockerfile \
    '*.yaml' '*.js' '*.css' '*.lua' | grep -v '^tests/web/node_modules/')
for f in $files; do
    while read -r line path; do
        path=${path%%+([.,])} # the end of a sentence or of a list item
        case $path in
        *'<'* | *'{'* | *'*'* | *'$'* | *'['* | */) continue ;; # patterns, placeholders, folders
        */v[0-9]* | */v[0-9]*/* | api/errors) continue ;; # Kubernetes API groups (core/v1)
        esac
        [[ ${path##*/} =~ ^[A-Z_]+$ ]] && continue # trigger/NAME
        checked=$((checked + 1))
        known "$path" "$f" && continue
        echo "FAIL $f:$line cites $path, which is not in the tree"
        fails=$((fails + 1))
    done < <(comments "$f" | grep -oE "^[0-9]+:|(^|[^A-Za-z0-9_./-])(\.\./)*($tops)/[][A-Za-z0-9_./*<>{},\$-]*" |
        awk '/^[0-9]+:$/ { n = $0; sub(":", "", n); next } { sub(/^[^A-Za-z0-9.]/, ""); print n, $0 }')
done
echo "$checked paths checked; $((fails == 0 ? 1 : 0)) passed, $fails failed"
[ "$fails" = 0 ]
