# ward session driver for sh (embedded in ward; see tools/agent/session.c).
# One shell for the whole session: cd, variables and functions persist.
# A cell arrives on fd 5 as a header line "NONCE N TIMEOUT_S NLINES" and
# NLINES lines of code; the cell runs with fds 5 and 6 closed (neither it
# nor what it starts can touch the channel), then one JSON line with the
# nonce and $? leaves on fd 6. The time limit is ward's (tools/agent/session.c):
# at the cell's timeout it sends SIGINT to the shell's process group, as a
# terminal's Ctrl-C would: a running command is interrupted; a loop of
# builtins is not, and ward then ends the session. (A watchdog subshell
# with a sleep did it here before: two more processes at every cell.)
trap '__ward_int=true' INT
# Up: ward ends the start-up's CPU pinning (tracer/output.c) and drops
# this line; the cells then run with every CPU.
printf '{"ward":"ready"}\n' >&6
# A SIGINT that comes once the cell is over (sent as its result left)
# makes the wait for the next cell fail: wait again, the channel is fine.
__ward_next() {
	while :; do
		__ward_int=false
		IFS=' ' read -r __ward_nonce __ward_n __ward_t __ward_nl <&5 &&
			return 0
		$__ward_int || return 1
	done
}
while __ward_next; do
	__ward_code=
	__ward_i=0
	while [ "$__ward_i" -lt "$__ward_nl" ]; do
		IFS= read -r __ward_l <&5 || exit 0
		__ward_code="$__ward_code$__ward_l
"
		__ward_i=$((__ward_i + 1))
	done
	__ward_int=false
	{ eval "$__ward_code"; } 5<&- 6>&-
	__ward_rc=$?
	printf '{"nonce":"%s","n":%s,"exit_code":%s,"interrupted":%s}\n' \
		"$__ward_nonce" "$__ward_n" "$__ward_rc" "$__ward_int" >&6
done
# The session is closed: end what the cells left running in the background,
# as a terminal's hangup would, so that the run ends now.
trap '' TERM
kill -TERM 0 2>/dev/null
exit 0
