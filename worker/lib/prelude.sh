# The start of every TPU script: the C locale, a PATH of the system's own
# dirs (not the user's), and stderr silenced (the answer is stdout alone).
export LC_ALL=C
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
exec 2>/dev/null
