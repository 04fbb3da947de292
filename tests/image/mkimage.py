#!/usr/bin/env python3
"""Build image fixtures offline, for tests/image/*.sh.

  mkimage.py oci DIR [--busybox PATH] [--user SPEC]
                                           a two-layer busybox image as an OCI
                                           layout (tag "test"), with whiteouts;
                                           --user sets its config's User
  mkimage.py docker FILE [--busybox PATH]  the same image as a docker-archive
  mkimage.py oci-archive FILE              the same OCI layout in a tar (as skopeo's
                                           oci-archive: makes it)
  mkimage.py docker-legacy FILE            the same image as a pre-2016 docker save
                                           (repositories, ID/json with parents,
                                           ID/layer.tar, no manifest.json)
  mkimage.py oci-nested DIR DEPTH          the OCI layout with its manifest under
                                           DEPTH nested image indexes
  mkimage.py hostile KIND OUT [ARG]        one hostile image (see KINDS)
  mkimage.py testbed DIR [ID]              the busybox image plus a third layer: a
                                           SWE-bench-like /testbed (calc.sh with a
                                           bug, test.sh failing on it, ID in
                                           /testbed/INSTANCE), /etc/os-release
                                           saying ID=mini-testbed, more applets

The busybox image: layer 1 (gzip) has bin/busybox and its applets as
symlinks, etc/passwd, etc/removed.txt, usr/share/gone/x, opq/a, a hard
link; layer 2 (plain tar) deletes etc/removed.txt and usr/share/gone with
whiteouts, makes opq/ opaque (.wh..wh..opq) and adds opq/b and etc/motd.
"""
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile

APPLETS = ["sh", "ls", "cat", "echo", "id", "env", "pwd", "test", "true", "false", "stat", "readlink", "touch"]


def tar_bytes(entries, fmt=tarfile.PAX_FORMAT):
    """entries: list of (TarInfo, data bytes or None)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
        for ti, data in entries:
            t.addfile(ti, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def ti(name, type_=tarfile.REGTYPE, data=b"", mode=0o644, linkname="", uid=0, gid=0, size=None):
    t = tarfile.TarInfo(name)
    t.type = type_
    t.mode = mode
    t.uid, t.gid = uid, gid
    t.mtime = 1700000000
    t.linkname = linkname
    t.size = len(data) if size is None and type_ == tarfile.REGTYPE else (size or 0)
    return (t, data if type_ == tarfile.REGTYPE else None)


def dirent(name, mode=0o755, uid=0, gid=0):
    return ti(name, tarfile.DIRTYPE, mode=mode, uid=uid, gid=gid)


def busybox_layers(busybox):
    with open(busybox, "rb") as f:
        bb = f.read()
    l1 = [dirent("bin"), ti("bin/busybox", data=bb, mode=0o755)]
    l1 += [ti("bin/" + a, tarfile.SYMTYPE, linkname="busybox", mode=0o777) for a in APPLETS]
    l1 += [
        dirent("etc"),
        ti("etc/passwd", data=b"root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000::/home/user:/bin/sh\n"),
        ti("etc/group", data=b"root:x:0:\nuser:x:1000:\nstaff:x:50:\n"),
        ti("etc/removed.txt", data=b"this file is deleted by layer 2\n"),
        ti("etc/secret", data=b"root only\n", mode=0o600),
        ti("etc/hosts.link", tarfile.LNKTYPE, linkname="etc/passwd"),
        dirent("usr"), dirent("usr/share"), dirent("usr/share/gone"),
        ti("usr/share/gone/x", data=b"gone\n"),
        dirent("opq"), ti("opq/a", data=b"a from layer 1\n"),
        dirent("home"), dirent("home/user", mode=0o700, uid=1000, gid=1000),
        ti("home/user/notes", data=b"user's\n", mode=0o600, uid=1000, gid=1000),
        dirent("srv", mode=0o755, uid=1000, gid=1000),
        ti("srv/data", data=b"the user's data\n", mode=0o644, uid=1000, gid=1000),
        dirent("work"), dirent("tmp", mode=0o1777),
    ]
    l2 = [
        dirent("etc"),
        ti("etc/.wh.removed.txt"),
        ti("etc/motd", data=b"hello from layer 2\n"),
        dirent("usr/share"),
        ti("usr/share/.wh.gone"),
        dirent("opq"),
        ti("opq/.wh..wh..opq"),
        ti("opq/b", data=b"b from layer 2\n"),
        # a hard link to a file of the layer below
        ti("etc/passwd.hard", tarfile.LNKTYPE, linkname="etc/passwd"),
    ]
    return tar_bytes(l1), tar_bytes(l2)


TESTBED_APPLETS = ["sed", "diff", "cp", "grep", "mkdir", "rm", "head", "mv", "sleep"]


def testbed_layer(instance):
    """A repository with a failing test, as SWE-bench images have /testbed."""
    calc = b"add() { echo $(($1 - $2)); }\n"
    test = (b". ./calc.sh\n"
            b"if [ \"$(add 2 3)\" = 5 ]; then echo PASS; else echo FAIL: add 2 3 gave $(add 2 3); exit 1; fi\n")
    entries = [dirent("bin")]
    entries += [ti("bin/" + a, tarfile.SYMTYPE, linkname="busybox", mode=0o777) for a in TESTBED_APPLETS]
    entries += [
        dirent("etc"),
        ti("etc/os-release", data=b"ID=mini-testbed\nNAME=\"mini test bed\"\n"),
        dirent("testbed"),
        ti("testbed/calc.sh", data=calc),
        ti("testbed/test.sh", data=test, mode=0o755),
        ti("testbed/INSTANCE", data=instance.encode() + b"\n"),
    ]
    return tar_bytes(entries)


def sha(b):
    return hashlib.sha256(b).hexdigest()


def config_for(diff_ids, env=None, workdir="/work", user=""):
    return json.dumps({
        "architecture": "amd64" if os.uname().machine == "x86_64" else "arm64",
        "os": "linux",
        "config": {
            "Env": env or ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "IMAGE_VAR=from-image"],
            "WorkingDir": workdir,
            "User": user,
            "Cmd": ["/bin/sh"],
        },
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + d for d in diff_ids]},
        "history": [{"created_by": "mkimage.py"}],
    }, sort_keys=True).encode()


def write_blob(d, data):
    h = sha(data)
    os.makedirs(os.path.join(d, "blobs", "sha256"), exist_ok=True)
    with open(os.path.join(d, "blobs", "sha256", h), "wb") as f:
        f.write(data)
    return h


def write_oci(d, layers, tag="test", compress=(True, False), config=None, lie=None, user=""):
    """layers: raw tar bytes.  lie: what to get wrong in the manifest."""
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "oci-layout"), "w") as f:
        json.dump({"imageLayoutVersion": "1.0.0"}, f)
    descs, diff_ids = [], []
    for i, raw in enumerate(layers):
        diff_ids.append(sha(raw))
        z = compress[i] if i < len(compress) else False
        blob = gzip.compress(raw, mtime=0) if z else raw
        h = write_blob(d, blob)
        descs.append({"mediaType": "application/vnd.oci.image.layer.v1.tar" + ("+gzip" if z else ""),
                      "digest": "sha256:" + h, "size": len(blob)})
    cfg = config if config is not None else config_for(diff_ids, user=user)
    if lie == "diff_id":
        c = json.loads(cfg)
        c["rootfs"]["diff_ids"][0] = "sha256:" + "0" * 64
        cfg = json.dumps(c).encode()
    ch = write_blob(d, cfg)
    cdesc = {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": "sha256:" + ch, "size": len(cfg)}
    if lie == "layer_size":
        descs[0]["size"] -= 10
    if lie == "layer_digest":  # the blob stored under a digest it does not have
        real = descs[0]["digest"][7:]
        write_blob_as(d, "1" * 64, open(os.path.join(d, "blobs", "sha256", real), "rb").read())
        descs[0]["digest"] = "sha256:" + "1" * 64
    if lie == "config_digest":
        cdesc["digest"] = "sha256:" + "2" * 64
        write_blob_as(d, "2" * 64, cfg)
    if lie == "config_size":
        cdesc["size"] = len(cfg) + 100
    manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                           "config": cdesc, "layers": descs}).encode()
    mh = write_blob(d, manifest)
    index = {"schemaVersion": 2, "manifests": [
        {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": "sha256:" + mh,
         "size": len(manifest), "annotations": {"org.opencontainers.image.ref.name": tag}}]}
    with open(os.path.join(d, "index.json"), "w") as f:
        json.dump(index, f)


def write_blob_as(d, h, data):
    os.makedirs(os.path.join(d, "blobs", "sha256"), exist_ok=True)
    with open(os.path.join(d, "blobs", "sha256", h), "wb") as f:
        f.write(data)


def write_docker(path, layers, name="busybox-docker:latest"):
    diff_ids = [sha(raw) for raw in layers]
    cfg = config_for(diff_ids)
    ch = sha(cfg)
    members = []
    names = []
    for raw in layers:
        h = sha(raw)
        members.append(dirent(h))
        members.append(ti(h + "/layer.tar", data=raw))
        members.append(ti(h + "/VERSION", data=b"1.0"))
        names.append(h + "/layer.tar")
    members.append(ti(ch + ".json", data=cfg))
    manifest = json.dumps([{"Config": ch + ".json", "RepoTags": [name], "Layers": names}]).encode()
    members.append(ti("manifest.json", data=manifest))
    members.append(ti("repositories", data=b"{}"))
    with open(path, "wb") as f:
        f.write(tar_bytes(members))


INDEX_TYPE = "application/vnd.oci.image.index.v1+json"


def nest_index(d, depth):
    """Put the layout's manifest under DEPTH image indexes (a platform
    list pointing at a platform list ...)."""
    with open(os.path.join(d, "index.json")) as f:
        index = json.load(f)
    desc = dict(index["manifests"][0])
    ref = desc.pop("annotations")
    for _ in range(depth):
        desc["platform"] = {"os": "linux", "architecture": "amd64" if os.uname().machine == "x86_64" else "arm64"}
        blob = json.dumps({"schemaVersion": 2, "mediaType": INDEX_TYPE, "manifests": [desc]}).encode()
        desc = {"mediaType": INDEX_TYPE, "digest": "sha256:" + write_blob(d, blob), "size": len(blob)}
    desc["annotations"] = ref
    index["manifests"] = [desc]
    with open(os.path.join(d, "index.json"), "w") as f:
        json.dump(index, f)


def tar_dir(d, path):
    """An OCI layout directory as an oci-archive: its files at the top."""
    with tarfile.open(path, "w") as t:
        for name in sorted(os.listdir(d)):
            t.add(os.path.join(d, name), arcname=name)


def write_legacy(path, layers, name="bb-legacy", tag="test", ids=None, parents=None, config=None):
    """docker save before 1.10: repositories names the top layer, each
    ID/json its parent.  ids/parents: override the chain (hostile)."""
    ids = ids or [sha(("layer%d" % i).encode() + raw) for i, raw in enumerate(layers)]
    parents = parents if parents is not None else [None] + ids[:-1]
    cfg = config or json.loads(config_for([sha(r) for r in layers]))["config"]
    members = []
    for i, (lid, raw) in enumerate(zip(ids, layers)):
        j = {"id": lid, "created": "2015-01-01T00:00:00Z", "os": "linux",
             "architecture": "amd64" if os.uname().machine == "x86_64" else "arm64"}
        if parents[i]:
            j["parent"] = parents[i]
        if i == len(layers) - 1:
            j["config"] = cfg
        members += [dirent(lid), ti(lid + "/VERSION", data=b"1.0"), ti(lid + "/json", data=json.dumps(j).encode()),
                    ti(lid + "/layer.tar", data=raw)]
    members.append(ti("repositories", data=json.dumps({name: {tag: ids[-1]}}).encode()))
    with open(path, "wb") as f:
        f.write(tar_bytes(members))


def hostile(kind, out, arg):
    """Root filesystem tarballs unless the kind says oci-*."""
    base = [dirent("."), dirent("etc"), ti("etc/ok", data=b"ok\n")]
    if kind == "dotdot":
        ents = base + [ti("../escape-dotdot", data=b"x")]
    elif kind == "dotdot-deep":
        ents = base + [ti("etc/../../escape-deep", data=b"x")]
    elif kind == "absolute":
        ents = base + [ti(arg + "/escape-absolute", data=b"x")]
    elif kind == "symlink-dir":  # a symlink to outside, then a file through it
        ents = base + [ti("evil", tarfile.SYMTYPE, linkname=arg), ti("evil/pwned", data=b"x")]
    elif kind == "symlink-rel":
        ents = base + [ti("evil", tarfile.SYMTYPE, linkname="../../../../../../.." + arg),
                       ti("evil/pwned", data=b"x")]
    elif kind == "symlink-only":  # a dangling absolute symlink alone: kept, never followed
        ents = base + [ti("etc/link-out", tarfile.SYMTYPE, linkname=arg + "/pwned")]
    elif kind == "hardlink-out":
        ents = base + [ti("h", tarfile.LNKTYPE, linkname="../../../../../../../etc/passwd")]
    elif kind == "hardlink-abs":
        ents = base + [ti("h", tarfile.LNKTYPE, linkname="/etc/passwd")]
    elif kind == "hardlink-symlink":  # a hard link through a symlink to outside
        ents = base + [ti("evil", tarfile.SYMTYPE, linkname=arg), ti("h", tarfile.LNKTYPE, linkname="evil/target")]
    elif kind == "device":
        c = ti("etc/sda", tarfile.CHRTYPE, mode=0o666)
        c[0].devmajor, c[0].devminor = 8, 0
        b = ti("etc/blk", tarfile.BLKTYPE, mode=0o666)
        b[0].devmajor, b[0].devminor = 8, 0
        ents = base + [c, b]
    elif kind == "fifo":
        ents = base + [ti("etc/fifo", tarfile.FIFOTYPE, mode=0o666)]
    elif kind == "setuid":
        ents = base + [ti("etc/suid", data=b"#!/bin/sh\n", mode=0o4755), ti("etc/sgid", data=b"x", mode=0o2755),
                       dirent("etc/sgiddir", mode=0o2775)]
    elif kind == "newline":
        ents = base + [ti("etc/bad\nname", data=b"x")]
    elif kind == "huge":  # a header that claims a 100 GiB file, and little data
        raw = b""
        for e, d in base:
            raw += e.tobuf(tarfile.GNU_FORMAT)
            if d:
                raw += d + b"\0" * (-len(d) % 512)
        big = ti("etc/huge")[0]
        big.size = 100 << 30
        raw += big.tobuf(tarfile.GNU_FORMAT) + b"x" * 4096
        open(out, "wb").write(raw)
        return
    elif kind == "bomb":  # 200 MiB of zeros, gzip'd to ~200 KiB
        ents = base
        with gzip.open(out, "wb", compresslevel=9) as g:
            with tarfile.open(fileobj=g, mode="w|") as t:
                for e, d in ents:
                    t.addfile(e, io.BytesIO(d) if d is not None else None)
                big = tarfile.TarInfo("etc/zeros")
                big.size = 200 << 20
                t.addfile(big, ZeroReader(big.size))
        return
    elif kind == "bomb-files":  # arg (default 3) files of 100 MiB of zeros each, gzip'd to ~100 KiB each
        with gzip.open(out, "wb") as g:
            with tarfile.open(fileobj=g, mode="w|") as t:
                for e, d in base:
                    t.addfile(e, io.BytesIO(d) if d is not None else None)
                for i in range(int(arg or 3)):
                    big = tarfile.TarInfo("etc/zeros%d" % i)
                    big.size = 100 << 20
                    t.addfile(big, ZeroReader(big.size))
        return
    elif kind == "many":  # more entries than --max-entries
        ents = base + [ti("etc/f%05d" % i, data=b"") for i in range(int(arg or 3000))]
    elif kind == "whiteout-dot":
        ents = base + [ti("etc/.wh..", data=b"")]
    elif kind == "trailing":  # a tar followed by lots of garbage after its end
        raw = tar_bytes(base) + b"\0" * (3 << 20)
        open(out, "wb").write(gzip.compress(raw))
        return
    elif kind == "legacy-loop":  # the parent chain comes back to the top
        l1, l2 = tar_bytes(base), tar_bytes([dirent("etc"), ti("etc/two", data=b"2\n")])
        a, b = "a" * 64, "b" * 64
        write_legacy(out, [l1, l2], ids=[a, b], parents=[b, a])
        return
    elif kind == "legacy-noparent":  # a parent that is not in the archive
        write_legacy(out, [tar_bytes(base)], ids=["c" * 64], parents=["d" * 64])
        return
    elif kind == "xlink-whiteout":  # layer 2 removes etc/ok and hard-links to it
        l1 = tar_bytes(base)
        l2 = tar_bytes([dirent("etc"), ti("etc/.wh.ok"), ti("etc/h", tarfile.LNKTYPE, linkname="etc/ok")])
        write_oci(out, [l1, l2])
        return
    elif kind == "xlink-symlink":  # layer 1: evil -> outside; layer 2: a hard link through it
        l1 = tar_bytes(base + [ti("evil", tarfile.SYMTYPE, linkname=arg)])
        l2 = tar_bytes([dirent("etc"), ti("etc/h", tarfile.LNKTYPE, linkname="evil/target")])
        write_oci(out, [l1, l2])
        return
    elif kind == "xlink-dir":  # a hard link to a lower layer's directory
        l2 = tar_bytes([ti("h", tarfile.LNKTYPE, linkname="etc")])
        write_oci(out, [tar_bytes(base), l2])
        return
    elif kind == "nest-bomb":  # image indexes nested 50 deep
        write_oci(out, [tar_bytes(base)])
        nest_index(out, 50)
        return
    elif kind == "ociar-digest":  # an oci-archive whose layer blob is not what its name says
        d = out + ".d"
        write_oci(d, [tar_bytes(base)], compress=(False,))
        blobs = os.path.join(d, "blobs", "sha256")
        big = max(os.listdir(blobs), key=lambda n: os.path.getsize(os.path.join(blobs, n)))
        raw = tar_bytes(base + [ti("etc/evil", data=b"x")])
        with open(os.path.join(blobs, big), "wb") as f:
            f.write(raw)
        tar_dir(d, out)
        return
    elif kind.startswith("oci-"):
        lie = kind[4:]
        l1, l2 = tar_bytes(base), tar_bytes([dirent("etc"), ti("etc/two", data=b"2\n")])
        if lie == "symlink-layer":  # layer 1: etc -> outside; layer 2: etc/passwd
            l1 = tar_bytes([dirent("."), ti("etc", tarfile.SYMTYPE, linkname=arg)])
            l2 = tar_bytes([dirent("etc"), ti("etc/pwned", data=b"x")])
            lie = None
        write_oci(out, [l1, l2], lie=lie)
        return
    else:
        sys.exit("unknown kind " + kind)
    with open(out, "wb") as f:
        f.write(tar_bytes(ents, fmt=tarfile.GNU_FORMAT))


class ZeroReader:
    def __init__(self, n):
        self.n = n

    def read(self, k=-1):
        k = self.n if k < 0 else min(k, self.n)
        self.n -= k
        return b"\0" * k


def main():
    a = sys.argv[1:]
    opt = {"--busybox": "/bin/busybox", "--user": ""}
    for k in opt:
        if k in a:
            i = a.index(k)
            opt[k] = a[i + 1]
            del a[i:i + 2]
    bb = opt["--busybox"]
    if a[0] == "oci":
        write_oci(a[1], list(busybox_layers(bb)), user=opt["--user"])
    elif a[0] == "docker":
        write_docker(a[1], list(busybox_layers(bb)))
    elif a[0] == "oci-archive":
        write_oci(a[1] + ".d", list(busybox_layers(bb)), user=opt["--user"])
        tar_dir(a[1] + ".d", a[1])
    elif a[0] == "docker-legacy":
        write_legacy(a[1], list(busybox_layers(bb)))
    elif a[0] == "oci-nested":
        write_oci(a[1], list(busybox_layers(bb)))
        nest_index(a[1], int(a[2]))
    elif a[0] == "testbed":
        write_oci(a[1], list(busybox_layers(bb)) + [testbed_layer(a[2] if len(a) > 2 else "testbed")],
                  tag="latest", compress=(True, False, True))
    elif a[0] == "hostile":
        hostile(a[1], a[2], a[3] if len(a) > 3 else "")
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
