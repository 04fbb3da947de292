#!/bin/bash
# An image config's User (docs/images.md, "Ownership inside"): the command
# runs as that uid/gid (forms UID:GID, NAME, NAME:GROUP, UID), names come
# from the image's own /etc/passwd and /etc/group, a name the image lacks
# is refused at open; the user's files are its own (writable in the
# session's overlay under standard), root's are not; still no capabilities
# and no way back to root.  As root and rootless.
. "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
mini_test_init "$@"
. "$(dirname "${BASH_SOURCE[0]}")/image_lib.sh"
have python3 || skip_all "python3 is not installed"
[[ -x /bin/busybox ]] || skip_all "busybox-static is not installed"

mk() { python3 "$MKIMAGE" oci "$T/$1" --user "$2" && img import -q "$T/$1" --name "$1:test" >/dev/null; }
mk u-num "1000:1000" && mk u-name user && mk u-group "user:staff" && mk u-bare 4242 && mk u-none nosuch &&
    mk u-nogroup "user:nogrp" || { log "FAIL: building the fixtures"; exit 1; }
start_daemon

SBX_PROFILE=strict
expect_eq "UID:GID: id -u, id -g" "1000 1000" sbx --image u-num:test -- 'echo $(id -u) $(id -g)'
expect_eq "NAME: the passwd uid and group" "1000 1000" sbx --image u-name:test -- 'echo $(id -u) $(id -g)'
expect_eq "NAME:GROUP: the group by name" "1000 50" sbx --image u-group:test -- 'echo $(id -u) $(id -g)'
expect_eq "a uid the image does not list: group 0" "4242 0" sbx --image u-bare:test -- 'echo $(id -u) $(id -g)'
expect_eq "the workspace is writable as the user" "ok" sbx --image u-num:test -- "echo ok >$WS/f; cat $WS/f"
expect_eq "files the workspace gets are the workspace owner's on the host" "$(stat -c %u "$WS")" stat -c %u "$WS/f"
expect_eq "--user overrides the config's User" "1000 50" sbx --image u-num:test --user user:staff -- \
    'echo $(id -u) $(id -g)'
expect_eq "--user 0: root of the image" "0 0" sbx --image u-num:test --user 0 -- 'echo $(id -u) $(id -g)'
run sbx --user 1000 -- true
if [[ $RC == 125 ]] && contains "$ERR" "open.user is for an image's root"; then pass "--user without an image is refused"
else fail "--user without an image is refused" "rc $RC: $ERR"; fi
run sbx --image u-none:test -- true
if [[ $RC == 125 ]] && contains "$ERR" 'user "nosuch" is not in the image'"'"'s /etc/passwd'; then
    pass "a user name the image lacks is refused at open"
else fail "a user name the image lacks is refused at open" "rc $RC: $ERR"; fi
run sbx --image u-nogroup:test -- true
if [[ $RC == 125 ]] && contains "$ERR" 'group "nogrp" is not in the image'; then
    pass "a group name the image lacks is refused at open"
else fail "a group name the image lacks is refused at open" "rc $RC: $ERR"; fi

for SBX_PROFILE in strict standard; do
    p=$SBX_PROFILE
    expect_eq "$p: no capabilities as the user" "CapEff: 0000000000000000 CapPrm: 0000000000000000" \
        sbx --image u-num:test -- 'echo $(grep -E "^CapEff" /proc/self/status) $(grep -E "^CapPrm" /proc/self/status)'
    expect_eq "$p: no_new_privs" "NoNewPrivs:	1" sbx --image u-num:test -- 'grep NoNewPrivs /proc/self/status'
    # Only the user's ids are mapped: no way to become root or anyone else.
    expect_eq "$p: real, effective, saved uids all the user's" "Uid: 1000 1000 1000 1000" \
        sbx --image u-num:test -- 'echo $(grep ^Uid: /proc/self/status)'
    expect_eq "$p: the only mapped uid is the user's" "1000 1" sbx --image u-num:test -- \
        'set -- $(cat /proc/self/uid_map); echo $1 $3'
    expect_rc "$p: no setuid back to root (busybox su)" 1 sbx --image u-num:test -- \
        'busybox su -c true root 2>/dev/null || exit 1'
    expect_eq "$p: the user's own file is readable" "the user's data" sbx --image u-num:test -- 'cat /srv/data'
done

SBX_PROFILE=standard
expect_eq "standard: the user's file is writable in the session overlay" "the user's data
more" sbx --image u-num:test -- 'echo more >>/srv/data && cat /srv/data'
expect_eq "standard: and its private home too" "ok" sbx --image u-name:test -- \
    'echo ok >/home/user/notes && cat /home/user/notes'
R=$(image_root u-num:test)
check "the store's copy is untouched" grep -qx "the user's data" "$R/srv/data"
if [[ $(id -u) == 0 ]]; then
    # A root daemon keeps the image's owners: root's files are not the user's.
    expect_eq "root: the image's owners are kept (root's, the user's)" "0:0 1000:1000" sbx --image u-num:test -- \
        'echo $(stat -c %u:%g /etc/motd) $(stat -c %u:%g /srv/data)'
    expect_rc "root: a root-owned file of the image is not writable" 1 sbx --image u-num:test -- \
        'echo x >>/etc/motd 2>/dev/null || exit 1'
    expect_rc "root: root's 0600 file is not readable" 1 sbx --image u-num:test -- 'cat /etc/secret 2>/dev/null || exit 1'
else
    # Rootless: one uid is mapped, every file of the image is the user's.
    expect_eq "rootless: every file of the image is the user's" "1000" sbx --image u-num:test -- 'stat -c %u /etc/motd'
fi
finish
