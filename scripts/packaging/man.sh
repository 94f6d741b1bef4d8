#!/bin/sh
# man.sh BIN OUT: writes tpurun(1) from the binary's own help: the overview
# (tpurun --help), then each command's --help as it prints it. Their long
# texts are the files of docs/help/, embedded in the binary: one source for
# both.
set -eu
bin=$1 out=$2
. "$(dirname "$0")/help.sh"

# Help text as roff, verbatim: backslashes escaped, no line read as a request.
verbatim() {
  printf '.nf\n'
  sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"
  printf '.fi\n'
}

version=$("$bin" --version | awk '{print $2; exit}')
{
  printf '.TH TPURUN 1 "" "tpurun %s" "User Commands"\n' "$version"
  printf '.SH NAME\ntpurun \\- run and manage jobs on Google Cloud TPU VM pods\n'
  printf '.SH SYNOPSIS\n.B tpurun\n[\\fIOPTIONS\\fR] \\fICOMMAND\\fR [\\fIOPTIONS\\fR] [\\fB\\-\\-\\fR \\fIARGS\\fR...]\n'
  printf '.SH DESCRIPTION\n'
  "$bin" --help | verbatim
  printf '.SH COMMANDS\n'
  help_commands "$bin" | while IFS="$(printf '\t')" read -r name _; do
    printf '.SS tpurun %s\n' "$name"
    "$bin" "$name" --help | verbatim
  done
  printf '.SH FILES\n.TP\n.I ./tpurun.json, ~/.config/tpurun/config.json\nThe pods: their workers or gcloud names, the shared mount, SSH settings.\n'
  printf '.TP\n.I ~/.local/state/tpurun/audit.jsonl\nYour record of every process you killed with \\-\\-force.\n'
  printf '.TP\n.I <logs_root>/<user>/<project>/<run>/\nA run'"'"'s record: run.json, workerN.log, state.json and the watcher'"'"'s watcher.log.\n'
  printf '.SH VERSION\n%s\n' "$("$bin" --version | sed 's/\\/\\e/g')"
} >"$out"
