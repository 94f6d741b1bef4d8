# "$@" holds the device globs; afterwards it holds
# `-lname PREFIX* -printf '' ( -lname G1 -o -lname G2 ... ) -printf '' ! -lname *NEWLINE*`.
# - find reads the link anew for every -lname it evaluates, and reading
#   /proc/PID/fd/N is most of the scan's cost on a host with many open fds
#   (data loaders). PREFIX, the globs' common literal start (e.g. /dev/; used
#   when there are several globs and it is more than /), lets most fds fail on
#   one read instead of one per glob. Every glob implies it: no answer changes.
# - find's optimizer reorders tests (it would run the newline test first, a
#   read for every fd), but never across an action: the empty -printf ''s keep
#   the order as written.
# - A glob's `*` matches a newline, and a link target with one in it could
#   forge records in find's line output (another user can make such a target:
#   a file opened in their own mount namespace). No real device name has one.
n=$# pre='' first=1
for g do
  set -- "$@" -o -lname "$g"
  lit=${g%%[][*?\\]*}
  if [ "$first" = 1 ]; then
    pre=$lit first=0
  else
    while [ -n "$pre" ]; do
      case $lit in "$pre"*) break ;; esac
      pre=${pre%?}
    done
  fi
done
shift "$n"
if [ $# -gt 3 ] && [ -n "${pre#/}" ]; then
  shift
  set -- -lname "$pre*" -printf '' \( "$@" \) -printf '' ! -lname '*
*'
elif [ $# -gt 0 ]; then
  shift
  set -- \( "$@" \) -printf '' ! -lname '*
*'
else
  set -- -false
fi
