"""Confining the worker: what a candidate's process may see, write and leave behind.

The harness writes a `Plan` (the round's folder, what the worker may read, its limits); the
worker calls `confine` first thing, before it reads the candidate, and only the confined process
goes on to compile and run it. On Linux that process is, where the machine allows it:

- the first process of its own PID namespace, with its own ``/proc``: every process it starts
  ends with it (a daemon that called ``setsid`` included), and the harness's processes, their
  memory and environment are out of its sight. The process that called `confine` stays
  outside as its keeper and exits with its status. Its own network namespace (no network at
  all) and IPC namespace (no shared memory segment outlives it);
- in its own mount namespace where everything is read-only but the round's folder, which is a
  size-limited tmpfs of its own (what it writes never reaches the harness's disk, and is gone
  with it), and where the run's store is shown empty but for that folder (the model's
  exchanges, the other rounds' folders are out of its sight);
- a separate user (``nobody``) when the harness is root; the paths it must read but that user
  cannot reach (an interpreter under ``/root``) are shown to it by mounts, nothing beside them;
- without capabilities, with ``PR_SET_NO_NEW_PRIVS``, under Landlock (writes only in its folder
  and to the devices it needs, no TCP, no signals out) and resource limits.

`supported` probes what this machine offers. A mechanism that is missing is named with the
reason in the record `confine` returns, which the harness keeps with the round's validation.
"""

from __future__ import annotations

import ctypes
import json
import os
import platform
import pwd
import resource
import signal
import stat
import sys
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, NoReturn

#: The user a root harness runs its workers as.
WORKER_USER = "nobody"
#: The largest file a worker may write, and how many files it may hold open.
FILE_SIZE_MB = 1024
OPEN_FILES = 4096
#: How many processes the worker's user may run (counted only when it is a user of its own).
PROCESSES = 512
#: The size of the worker's own folder, in MB (where it has a mount namespace).
FOLDER_MB = 1024
#: Folders never hidden from a worker, nor any folder holding one of them.
SYSTEM_FOLDERS = ("/dev", "/proc", "/sys", "/etc", "/usr", "/lib", "/run")

# Linux constants (linux/sched.h, linux/mount.h, linux/prctl.h, linux/landlock.h).
CLONE_NEWNS, CLONE_NEWIPC, CLONE_NEWUSER = 0x20000, 0x8000000, 0x10000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 8, 4096, 16384, 1 << 18
MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID = 1, 2
AT_FDCWD, AT_RECURSIVE = -100, 0x8000
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP = 1, 4, 24
PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 36, 38, 47, 4
SYS_MOUNT_SETATTR = 442
SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
LANDLOCK_CREATE_RULESET_VERSION, LANDLOCK_RULE_PATH_BENEATH = 1, 1
#: Landlock's write rights by the first ABI that has them: what a worker may do only in its folder.
LANDLOCK_WRITES = {1: 0b1_1111_1111_0010, 2: 1 << 13, 3: 1 << 14}  # write, remove, make...; refer; truncate
LANDLOCK_WRITE_FILE, LANDLOCK_TRUNCATE = 1 << 1, 1 << 14
LANDLOCK_TCP = 0b11  # bind and connect (ABI 4)
LANDLOCK_SCOPES = 0b11  # abstract unix sockets and signals (ABI 6)
#: The machines whose system call numbers above are right (the generic table).
MACHINES = ("x86_64", "aarch64")


@dataclass(frozen=True)
class Support:
    """What this machine lets the harness enforce on a worker; a reason where it cannot."""

    root: bool
    namespaces: str | None
    """None when the worker can have its own PID and mount namespaces, else why not."""
    landlock_abi: int
    landlock: str | None
    """None when Landlock can confine the worker, else why not."""


#: What the worker enforces on itself (the harness's own part is `sandbox.HARNESS_MECHANISMS`).
WORKER_MECHANISMS = ("pid_namespace", "network_namespace", "ipc_namespace", "read_only_mounts", "hidden_folders",
                     "folder_quota", "user", "capabilities", "no_new_privs", "landlock", "landlock_network",
                     "landlock_scope")
#: The mechanisms that are mounts in the worker's mount namespace: missing with it.
MOUNTS = ("read_only_mounts", "hidden_folders", "folder_quota")


@lru_cache(maxsize=1)
def supported() -> Support:
    """Probe, without changing anything, what this machine offers a worker."""
    root = hasattr(os, "geteuid") and os.geteuid() == 0
    unknown = _unknown_system()
    if unknown is not None:
        return Support(root, unknown, 0, unknown)
    abi = _syscall(SYS_LANDLOCK_CREATE_RULESET, None, 0, LANDLOCK_CREATE_RULESET_VERSION)
    landlock = None if abi > 0 else _landlock_reason(ctypes.get_errno())
    return Support(root, _namespaces_reason(root), max(abi, 0), landlock)


def summary(support: Support | None = None) -> tuple[list[str], dict[str, str]]:
    """What a worker gets on this machine (for `argus optimize` to say at the start), and what
    it misses, each with why."""
    support = support or supported()
    offered: list[str] = []
    missing: dict[str, str] = {}
    if support.namespaces is None:
        offered.append("its own PID, mount, network and IPC namespaces")
    else:
        missing["namespaces"] = support.namespaces
    if not support.root:
        missing["user"] = "the harness is not root: the worker keeps its user"
    elif _known_user(WORKER_USER):
        offered.append(f"the user {WORKER_USER}")
    else:
        missing["user"] = f"this machine has no user {WORKER_USER}"
    if support.landlock is None:
        offered.append(f"Landlock (ABI {support.landlock_abi})")
    else:
        missing["landlock"] = support.landlock
    return offered, missing


def _known_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _unknown_system() -> str | None:
    """Why the system calls used here cannot be made on this machine (None: they can)."""
    if sys.platform != "linux":
        return f"{sys.platform} is not Linux"
    if platform.machine() not in MACHINES:
        return f"the system call numbers are not known on {platform.machine()}"
    return None


def _landlock_reason(errno: int) -> str:
    if errno == 38:  # ENOSYS
        return "the kernel has no Landlock (Linux 5.13 or later, built with it)"
    if errno == 95:  # EOPNOTSUPP
        return "Landlock is not enabled at boot (lsm=...,landlock)"
    return f"Landlock refused: {os.strerror(errno)}"


def _namespaces_reason(root: bool) -> str | None:
    if root:
        return None
    limit = _read_int("/proc/sys/user/max_user_namespaces")
    if limit == 0:
        return "user namespaces are disabled (user.max_user_namespaces = 0)"
    if _read_int("/proc/sys/kernel/unprivileged_userns_clone") == 0:
        return "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone = 0)"
    return None


def _read_int(path: str) -> int | None:
    try:
        return int(Path(path).read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


@dataclass
class Plan:
    """What the harness asks `confine` to do for one worker (passed to it as JSON)."""

    directory: str
    """The round's folder, absolute: the only place the worker may write."""
    readable: list[str] = field(default_factory=list)
    """Paths the worker must read (its interpreter, import path, the task file)."""
    devices: list[str] = field(default_factory=list)
    """Device files the worker may open for writing (``/dev/null``, the GPU's)."""
    cpu_seconds: int = 305
    memory_mb: int = 0
    """Address-space limit; 0 where a GPU is used (a CUDA context reserves far more than it uses)."""
    user: str = WORKER_USER
    hidden: list[str] = field(default_factory=list)
    """Folders shown to the worker empty but for `directory` and `readable` (the run's store)."""
    folder_mb: int = FOLDER_MB
    """The size of the tmpfs that is the worker's folder in its mount namespace."""
    carried: list[str] = field(default_factory=list)
    """Names of the files the harness put in `directory` for the worker (its request): copied
    into that tmpfs."""

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Plan:
        return cls(**json.loads(text))


def plan_for(directory: Path, *, seconds: float, memory_mb: int, gpu: bool, readable: Iterable[str],
             hidden: Iterable[str] = (), folder_mb: int = FOLDER_MB, carried: Iterable[str] = ()) -> Plan:
    """The plan of a worker in `directory` under these limits (the CPU-time limit is 5 s past the
    wall clock, which the harness enforces itself)."""
    devices = ["/dev/null", *(gpu_devices() if gpu else [])]
    return Plan(str(directory), sorted(set(readable)), devices, int(seconds) + 5, 0 if gpu else memory_mb,
                hidden=sorted(set(hidden)), folder_mb=folder_mb, carried=list(carried))


def gpu_devices(root: Path = Path("/dev")) -> list[str]:
    """The device files a GPU run opens: NVIDIA's (``nvidia0``, ``nvidiactl``, ``nvidia-uvm``,
    ``nvidia-caps/``) and AMD's (``kfd``, ``dri/``)."""
    found = sorted(str(p) for p in root.glob("nvidia*"))
    found += [str(root / name) for name in ("kfd", "dri") if (root / name).exists()]
    return found


@dataclass
class Record:
    """What was enforced on a worker and what is missing, with why."""

    user: str = ""
    enforced: list[str] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)

    def attempt(self, name: str, step: Callable[[], object]) -> bool:
        """Run `step`; record `name` as enforced, or as missing with the error's reason."""
        try:
            step()
        except OSError as err:
            self.missing[name] = err.strerror or str(err)
            return False
        self.enforced.append(name)
        return True

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def confine(plan: Plan, channel: int) -> Record:
    """Confine this process by `plan` and return what was enforced. On Linux this process forks:
    it stays behind as the keeper, which closes `channel`, waits and exits with the confined
    child's status (see `_keep`); `confine` returns in the child only."""
    record = Record()
    support = supported()
    unknown = _unknown_system()
    if unknown is not None:
        record.missing.update(dict.fromkeys(WORKER_MECHANISMS, unknown))
        _limit(plan, record, separate_user=False)
        return record
    namespaces = False
    if support.namespaces is not None:
        for name in ("pid_namespace", "network_namespace", "ipc_namespace"):
            record.missing[name] = support.namespaces
    else:
        if not support.root and _threads() > 1:  # a user namespace is entered by a process of one thread:
            _fork(channel, plan.cpu_seconds, reap=False)  # this child is one
        if record.attempt("pid_namespace", lambda: _unshare(support.root)):
            namespaces = True
            record.attempt("network_namespace", lambda: _check(_libc().unshare(ctypes.c_int(CLONE_NEWNET)), "unshare"))
            record.attempt("ipc_namespace", lambda: _check(_libc().unshare(ctypes.c_int(CLONE_NEWIPC)), "unshare"))
        else:
            for name in ("network_namespace", "ipc_namespace"):
                record.missing[name] = record.missing["pid_namespace"]
    if not namespaces:  # what the worker leaves comes to its keeper, which kills it
        record.attempt("subreaper", lambda: _prctl(PR_SET_CHILD_SUBREAPER, 1))
    _fork(channel, plan.cpu_seconds, reap=not namespaces)
    user = _identity(plan, support.root, namespaces)
    if not namespaces:
        record.missing.update(dict.fromkeys(MOUNTS, record.missing["pid_namespace"]))
    elif not record.attempt("read_only_mounts", lambda: _mount(plan, user, record)):
        user = _identity(plan, support.root, False)  # what it can reach without the mounts
        for name in MOUNTS[1:]:
            if name not in record.enforced:
                record.missing.setdefault(name, record.missing["read_only_mounts"])
    os.chdir(plan.directory)  # onto the folder's own (writable) mount
    _drop_privileges(plan, user, record)
    record.attempt("no_new_privs", lambda: _prctl(PR_SET_NO_NEW_PRIVS, 1))
    _landlock(plan, support, record)
    _limit(plan, record, separate_user=user is not None)
    return record


def _unshare(root: bool) -> None:
    """New PID and mount namespaces (and, for a user who is not root, a user namespace owning
    them, where this user is itself)."""
    uid, gid = os.getuid(), os.getgid()
    _check(_libc().unshare(ctypes.c_int(CLONE_NEWNS | CLONE_NEWPID | (0 if root else CLONE_NEWUSER))), "unshare")
    if not root:
        Path("/proc/self/setgroups").write_text("deny")
        Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
        Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")


def _threads() -> int:
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 1


def _fork(channel: int, cpu_seconds: int, *, reap: bool) -> None:
    """Fork: the child returns, to go on; this process stays behind as its keeper (`_keep`),
    with `reap` killing whatever the child leaves. Each dies with its parent."""
    parent = os.getppid()
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(1)
    keeper = os.getpid()
    child = os.fork()
    if child:
        os.close(channel)
        _keep(child, reap, cpu_seconds)
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() not in (keeper, 0):  # (0: the first process of a PID namespace)
        os._exit(1)


def _keep(child: int, reap: bool, cpu_seconds: int) -> NoReturn:
    """The keeper: wait for the child; with `reap`, kill whatever it left (orphans come to this
    subreaper); then exit as the child did."""
    while True:
        try:
            _, status, usage = os.wait4(child, 0)
            break
        except InterruptedError:
            continue
    if reap:
        _kill_children()
    code = os.waitstatus_to_exitcode(status)
    if code == -signal.SIGKILL and usage.ru_utime + usage.ru_stime >= cpu_seconds:
        code = -signal.SIGXCPU  # the first process of a PID namespace ignores SIGXCPU: the hard limit killed it
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        os.kill(os.getpid(), -code)
    os._exit(code if code >= 0 else 1)


def _kill_children() -> None:
    """Kill this process's children until none is left (their orphans come back to it)."""
    me = os.getpid()
    while True:
        for pid in _children(me):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return
        except InterruptedError:
            continue


def _children(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[1]) == parent:
                found.append(int(entry.name))
    return found


def _identity(plan: Plan, root: bool, mounts: bool) -> tuple[int, list[int]] | None:
    """The (uid, groups) the worker becomes: `plan.user` when the harness is root and that user
    can be shown what it must read (by `mounts`, or because it can already reach it). Its
    groups add those of the devices it needs that are not open to everyone (never root's)."""
    if not root:
        return None
    try:
        entry = pwd.getpwnam(plan.user)
    except KeyError:
        return None
    groups = [entry.pw_gid]
    for device in plan.devices:
        try:
            st = os.stat(device)
        except OSError:
            continue
        if st.st_mode & 0o006 != 0o006 and st.st_gid not in (0, *groups):
            groups.append(st.st_gid)
    user = (entry.pw_uid, groups)
    if mounts or all(_blocker(p, user) is None for p in [*plan.readable, plan.directory]):
        return user
    return None


def _blocker(path: str, user: tuple[int, list[int]]) -> str | None:
    """The outermost folder above `path` that `user` cannot pass through (None: it can reach it)."""
    uid, gids = user
    parts = Path(path).parts
    for n in range(1, len(parts)):
        folder = str(Path(*parts[:n]))
        try:
            st = os.stat(folder)
        except OSError:
            return None
        if not (st.st_mode & stat.S_IXOTH or (st.st_uid == uid and st.st_mode & stat.S_IXUSR)
                or (st.st_gid in gids and st.st_mode & stat.S_IXGRP)):
            return folder
    return None


def _mount(plan: Plan, user: tuple[int, list[int]] | None, record: Record) -> None:
    """In the new mount namespace: no mount travels back to the host; a fresh ``/proc`` for the
    PID namespace; the readable paths shown to `user`; the hidden folders shown empty but for
    what the worker must reach; its folder a tmpfs of its own; everything read-only but that
    and, for a worker that is not uid 0, its ``/proc``, which shows only its own processes (a
    GPU driver names its threads there: NVIDIA's fails to start with error 304 where it cannot)."""
    _mount_call(None, "/", None, MS_REC | MS_PRIVATE)
    _mount_call("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    reached = plan.readable + [plan.directory]
    if user is not None:
        behind: dict[str, list[str]] = {}
        for path in reached:
            blocker = _blocker(path, user)
            if blocker is not None and blocker != "/":
                behind.setdefault(blocker, []).append(path)
        for blocker in sorted(behind, key=_depth):
            _cover(blocker, behind[blocker])
    if plan.hidden:
        record.attempt("hidden_folders", lambda: _hide(plan.hidden, reached))
    else:
        record.missing["hidden_folders"] = "the harness named no folder to hide"
    if not record.attempt("folder_quota", lambda: _own_folder(plan)):
        _mount_call(plan.directory, plan.directory, None, MS_BIND)
    _mount_setattr("/", AT_RECURSIVE, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0)
    _mount_setattr(plan.directory, 0, 0, MOUNT_ATTR_RDONLY)
    if user is not None or os.getuid() != 0:  # never for uid 0, which owns /proc/sys without capabilities
        _mount_setattr("/proc", 0, 0, MOUNT_ATTR_RDONLY)  # its own processes' files only (see `_landlock`)


def _hide(folders: list[str], reached: list[str]) -> None:
    """Cover each of `folders` (outer ones first) with an empty tmpfs, with the paths of
    `reached` inside it bound back; a folder holding a system folder is never hidden."""
    for folder in sorted(folders, key=_depth):
        if any(Path(system).is_relative_to(folder) for system in SYSTEM_FOLDERS):
            raise OSError(22, f"{folder} holds a system folder and cannot be hidden")
        if folder in reached:
            raise OSError(22, f"{folder} is a folder the worker must read and cannot be hidden")
        if os.path.isdir(folder):  # else already out of sight (inside a folder covered before)
            _cover(folder, [p for p in reached if Path(p).is_relative_to(folder)])


def _depth(path: str) -> int:
    return len(Path(path).parts)


def _cover(folder: str, inside: list[str]) -> None:
    """An empty, open tmpfs over `folder`, with each path of `inside` bound back at its place
    (outer ones first), so that nothing else in the folder is shown."""
    handles = {p: os.open(p, os.O_PATH | os.O_CLOEXEC) for p in inside if os.path.exists(p)}
    _mount_call("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    for path, handle in sorted(handles.items(), key=lambda item: _depth(item[0])):
        if os.path.isdir(f"/proc/self/fd/{handle}"):
            os.makedirs(path, 0o755, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(path), 0o755, exist_ok=True)
            if not os.path.exists(path):
                os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o644))
        _mount_call(f"/proc/self/fd/{handle}", path, None, MS_BIND | MS_REC)
        os.close(handle)


def _own_folder(plan: Plan) -> None:
    """The worker's folder, a tmpfs of `plan.folder_mb` of its own holding the `plan.carried`
    files: what it writes is bounded, never reaches the harness's disk, and is gone with it."""
    carried = {name: (Path(plan.directory) / name).read_bytes() for name in plan.carried
               if (Path(plan.directory) / name).is_file()}
    _mount_call("tmpfs", plan.directory, "tmpfs", MS_NOSUID | MS_NODEV, f"size={plan.folder_mb}m,mode=0755")
    for name, data in carried.items():
        (Path(plan.directory) / name).write_bytes(data)


def _drop_privileges(plan: Plan, user: tuple[int, list[int]] | None, record: Record) -> None:
    """Become `user` (owning the folder), or stay this user without any capability; either way
    with an empty bounding set, so that no later ``exec`` gets one back."""
    try:
        for cap in range(_read_int("/proc/sys/kernel/cap_last_cap") or 40, -1, -1):
            _attempt_prctl(PR_CAPBSET_DROP, cap)
        _attempt_prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
        if user is not None:
            uid, groups = user
            os.chown(plan.directory, uid, groups[0])
            os.setgroups(groups)
            os.setresgid(groups[0], groups[0], groups[0])
            os.setresuid(uid, uid, uid)
            _prctl(PR_SET_DUMPABLE, 1)  # the change of user made its /proc files root's, even to itself
            record.enforced.append("user")
        else:
            _clear_capabilities()
    except OSError as err:
        record.missing["user" if user is not None else "capabilities"] = err.strerror or str(err)
        if user is not None and os.getuid() == 0 and "read_only_mounts" in record.enforced:
            _close_proc()  # made writable for the user it did not become
    uid = os.getuid()
    record.user = _user_name(uid)
    if user is None:
        record.missing["user"] = ("the harness is not root: the worker keeps its user" if uid else
                                  "no mount namespace to show another user what the worker must read")
    left = _capabilities_left()
    if left:
        record.missing.setdefault("capabilities", f"capabilities are left: {left}")
    elif "capabilities" not in record.missing:
        record.enforced.append("capabilities")


def _close_proc() -> None:
    """Make the worker's ``/proc`` read-only again, or end the worker (never run uid 0 with it
    writable)."""
    try:
        _mount_setattr("/proc", 0, MOUNT_ATTR_RDONLY, 0)
    except OSError:
        os._exit(1)


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _clear_capabilities() -> None:
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    _check(_libc().capset(ctypes.byref(header), data), "capset")


def _capabilities_left() -> str:
    """The capabilities this process holds, as ``/proc`` shows them (and, for root, its bounding
    set, which an ``exec`` would otherwise grant)."""
    sets = ("CapEff", "CapPrm", "CapAmb", *(("CapBnd",) if os.getuid() == 0 else ()))
    left = []
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in sets and int(value, 16):
            left.append(f"{name} {value.strip()}")
    return ", ".join(left)


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _landlock(plan: Plan, support: Support, record: Record) -> None:
    """Writes only beneath the folder, to `plan.devices` and, where its mount and PID namespaces
    give it a ``/proc`` of its own processes, to the files there; with ABI 4, no TCP; with
    ABI 6, no signal or abstract socket reaching outside."""
    abi = support.landlock_abi
    if support.landlock is not None:
        for name in ("landlock", "landlock_network", "landlock_scope"):
            record.missing[name] = support.landlock
        return
    writes = sum(bits for since, bits in LANDLOCK_WRITES.items() if abi >= since)
    attr = _RulesetAttr(writes, LANDLOCK_TCP if abi >= 4 else 0, LANDLOCK_SCOPES if abi >= 6 else 0)
    size = 8 if abi < 4 else 16 if abi < 6 else 24

    def restrict() -> None:
        ruleset = _syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), size, 0)
        _check(ruleset, "landlock_create_ruleset")
        try:
            file_writes = writes & (LANDLOCK_WRITE_FILE | LANDLOCK_TRUNCATE)
            own_proc = ["/proc"] if "read_only_mounts" in record.enforced and os.getuid() != 0 else []
            for path, allowed in [(plan.directory, writes), *((d, file_writes) for d in [*plan.devices, *own_proc])]:
                if not os.path.exists(path):
                    continue
                handle = os.open(path, os.O_PATH | os.O_CLOEXEC)
                try:
                    rule = _PathBeneath(allowed, handle)
                    _check(_syscall(SYS_LANDLOCK_ADD_RULE, ruleset, LANDLOCK_RULE_PATH_BENEATH, ctypes.byref(rule), 0),
                           f"landlock_add_rule {path}")
                finally:
                    os.close(handle)
            _check(_syscall(SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0), "landlock_restrict_self")
        finally:
            os.close(ruleset)

    if not record.attempt("landlock", restrict):
        for name in ("landlock_network", "landlock_scope"):
            record.missing[name] = record.missing["landlock"]
        return
    for name, since in (("landlock_network", 4), ("landlock_scope", 6)):
        if abi >= since:
            record.enforced.append(name)
        else:
            record.missing[name] = f"Landlock ABI {abi} is older than {since}"


def _limit(plan: Plan, record: Record, *, separate_user: bool) -> None:
    """CPU time (the hard limit 5 s later), no core files, file size, open files, address space
    (without a GPU) and, for a user of its own, processes."""
    limits = [(resource.RLIMIT_CORE, 0, 0), (resource.RLIMIT_CPU, plan.cpu_seconds, plan.cpu_seconds + 5),
              (resource.RLIMIT_FSIZE, FILE_SIZE_MB << 20, FILE_SIZE_MB << 20),
              (resource.RLIMIT_NOFILE, OPEN_FILES, OPEN_FILES)]
    if plan.memory_mb:
        limits.append((resource.RLIMIT_AS, plan.memory_mb << 20, plan.memory_mb << 20))
    if separate_user:
        limits.append((resource.RLIMIT_NPROC, PROCESSES, PROCESSES))

    def apply() -> None:
        for which, soft, hard in limits:
            current = resource.getrlimit(which)[1]
            cap = hard if current == resource.RLIM_INFINITY else min(hard, current)
            resource.setrlimit(which, (min(soft, cap), cap))

    record.attempt("rlimits", apply)
    if not separate_user:
        record.missing["rlimit_processes"] = "the worker shares its user with the harness, whose processes would count"


def close_harness() -> bool:
    """Make this (the harness's) process not dumpable: its memory and ``/proc`` files are then
    closed to a process without ``CAP_SYS_PTRACE``, even one of the same user."""
    if sys.platform != "linux":
        return False
    return _attempt_prctl(PR_SET_DUMPABLE, 0)


@lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _syscall(number: int, *args: Any) -> int:
    call = _libc().syscall
    call.restype = ctypes.c_long
    converted = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
    return int(call(ctypes.c_long(number), *converted))


def _prctl(option: int, value: int) -> None:
    _check(_libc().prctl(ctypes.c_int(option), ctypes.c_ulong(value), ctypes.c_ulong(0), ctypes.c_ulong(0),
                         ctypes.c_ulong(0)), f"prctl {option}")


def _attempt_prctl(option: int, value: int) -> bool:
    try:
        _prctl(option, value)
    except OSError:
        return False
    return True


def _mount_call(source: str | None, target: str, kind: str | None, flags: int, data: str | None = None) -> None:
    def text(value: str | None) -> bytes | None:
        return value.encode() if value is not None else None

    _check(_libc().mount(text(source), text(target), text(kind), ctypes.c_ulong(flags), text(data)),
           f"mount {target}")


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64), ("propagation", ctypes.c_uint64),
                ("userns_fd", ctypes.c_uint64)]


def _mount_setattr(path: str, flags: int, attr_set: int, attr_clr: int) -> None:
    attr = _MountAttr(attr_set, attr_clr, 0, 0)
    _check(_syscall(SYS_MOUNT_SETATTR, AT_FDCWD, ctypes.c_char_p(path.encode()), flags, ctypes.byref(attr),
                    ctypes.sizeof(attr)), f"mount_setattr {path}")


def _check(result: int, what: str) -> None:
    if result == -1:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")
