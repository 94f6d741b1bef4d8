# shellcheck shell=sh
# Reads tpurun's own --help (CLI11's layout) for man.sh and completions.sh, so
# the man page and the completions list exactly the commands and options the
# binary has.

# help_commands BIN: "name<TAB>summary" for each subcommand.
help_commands() {
  "$1" --help | awk '
    /^Subcommands:/ { on = 1; next }
    on && /^$/ { exit }
    on && /^  [a-z]/ { name = $1; sub(/^  [^ ]+ +/, ""); print name "\t" $0 }'
}

# help_options BIN [COMMAND]: "names<TAB>kind<TAB>summary" for each option of
# tpurun (or of COMMAND), where names are space-separated ("-w --worker") and
# kind is flag, value or optional (a value in brackets, like --wait [INTERVAL]).
help_options() {
  bin=$1
  shift
  "$bin" "$@" --help | awk '
    function emit() {
      if (names == "") return
      print names "\t" kind "\t" desc
      names = ""
    }
    /^Options:/ { on = 1; next }
    on && /^$/ { emit(); exit }
    on && /^  -/ {
      emit()
      line = substr($0, 3)
      split(line, parts, /  +/)
      spec = parts[1]
      desc = ""
      if (length(line) > length(spec)) { desc = line; sub(/^[^ ]+( [^ ]+)* +/, "", desc) }
      if (index(line, "  ") == 0) desc = ""
      first = spec; sub(/ .*/, "", first)
      rest = substr(spec, length(first) + 1)
      kind = rest == "" ? "flag" : (rest ~ /^ \[/ ? "optional" : "value")
      names = first; gsub(/,/, " ", names)
      next
    }
    on && /^      +[^ ]/ && names != "" && desc == "" { desc = $0; sub(/^ +/, "", desc); next }
    END { emit() }'
}
