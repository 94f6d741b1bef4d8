#!/bin/sh
# completions.sh BIN DIR: writes DIR/tpurun.bash and DIR/_tpurun (zsh) from
# the binary's own help, so they offer exactly its commands and options.
set -eu
bin=$1 dir=$2
. "$(dirname "$0")/help.sh"
tab=$(printf '\t')

commands=$(help_commands "$bin" | cut -f1 | tr '\n' ' ')
words() { help_options "$bin" "$@" | cut -f1 | tr '\n' ' '; }
takes_value() { help_options "$bin" "$@" | awk -F'\t' '$2 == "value" { print $1 }' | tr '\n' ' '; }

# ---------------------------------------------------------------- bash
{
  cat <<'HEAD'
# bash completion for tpurun. Generated from `tpurun --help` by
# scripts/packaging/completions.sh; do not edit.
_tpurun() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
  local cmd="" i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${COMP_WORDS[i]} in
      --) return 0 ;;  # the remote command: bash's default completion
      --config | --pod) ((i++)) ;;
      -*) ;;
      *) cmd=${COMP_WORDS[i]}; break ;;
    esac
  done
  case $prev in
    --config | --script | --env-file) COMPREPLY=($(compgen -f -- "$cur")); return 0 ;;
  esac
  local opts values
  case $cmd in
HEAD
  printf '    "") opts="%s %s"; values="%s" ;;\n' "$commands" "$(words)" "$(takes_value)"
  help_commands "$bin" | while IFS="$tab" read -r name _; do
    printf '    %s) opts="%s"; values="%s" ;;\n' "$name" "$(words "$name")" "$(takes_value "$name") --config --pod"
  done
  cat <<'TAIL'
    *) return 0 ;;
  esac
  # An option's value is the user's to type.
  [[ " $values " == *" $prev "* ]] && return 0
  if [[ -z $cmd || $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  fi
  return 0
}
complete -o bashdefault -o default -F _tpurun tpurun
TAIL
} >"$dir/tpurun.bash"

# ---------------------------------------------------------------- zsh
# zsh_specs [COMMAND]: one _arguments spec per option, e.g.
#   '(-w --worker)'{-w,--worker}'[Workers to act on]:value: '
zsh_specs() {
  help_options "$bin" "$@" | while IFS="$tab" read -r names kind desc; do
    desc=$(printf '%s' "$desc" | sed -e "s/'/'\\\\''/g" -e 's/\[/\\[/g' -e 's/\]/\\]/g')
    arg=""
    case $kind in value) arg=":value: " ;; optional) arg="::value: " ;; esac
    case $names in --config | --script | --env-file) arg=":file:_files" ;; esac
    set -- $names
    if [ $# -gt 1 ]; then
      printf "    '(%s)'{%s}'[%s]%s' \\\\\n" "$names" "$(echo "$names" | tr ' ' ',')" "$desc" "$arg"
    else
      case $names in -v | --verbose) printf "    '*%s[%s]' \\\\\n" "$names" "$desc" ;;
        *) printf "    '%s[%s]%s' \\\\\n" "$names" "$desc" "$arg" ;;
      esac
    fi
  done
}
{
  cat <<'HEAD'
#compdef tpurun
# zsh completion for tpurun. Generated from `tpurun --help` by
# scripts/packaging/completions.sh; do not edit.

_tpurun_commands() {
  local -a commands
  commands=(
HEAD
  help_commands "$bin" | while IFS="$tab" read -r name summary; do
    printf "    '%s:%s'\n" "$name" "$(printf '%s' "$summary" | sed -e "s/'/'\\\\''/g")"
  done
  cat <<'MID'
  )
  _describe -t commands 'tpurun command' commands
}

_tpurun() {
  local curcontext=$curcontext state line
  typeset -A opt_args
  _arguments -C \
MID
  zsh_specs
  cat <<'MID'
    '1: :_tpurun_commands' \
    '*:: :->args'
  [[ $state == args ]] || return
  curcontext=${curcontext%:*:*}:tpurun-$words[1]:
  case $words[1] in
MID
  help_commands "$bin" | while IFS="$tab" read -r name _; do
    printf '    %s)\n      _arguments \\\n' "$name"
    zsh_specs "$name" | sed 's/^/    /'
    # After --, exec and stage take a command line; others take names.
    if "$bin" "$name" --help | grep -q '^Usage:.*\[command\.\.\.\]'; then
      printf "        '*:: :_normal'\n      ;;\n"
    else
      printf "        '*: :_default'\n      ;;\n"
    fi
  done
  cat <<'TAIL'
  esac
}

_tpurun "$@"
TAIL
} >"$dir/_tpurun"
