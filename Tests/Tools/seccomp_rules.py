"""Systemd 252's seccomp filters, one builder per unit setting, made with libseccomp through ctypes.

Why a module of its own: systemd-seccomp-exec (beside it) reads a unit file and decides which
filters to load; this file only knows how each setting becomes a filter, following
src/shared/seccomp-util.c: the same syscalls, argument tests, errnos and bad-arch actions.
"""
import ctypes
import errno
import os
import socket


class LaunchError(Exception):
    """Why the program cannot be run under the unit's filters; the launcher prints it and exits 1."""


# --- libseccomp (values from its seccomp.h, an ABI it keeps stable) ---------------------------
ACT_KILL_PROCESS = 0x80000000
ACT_ALLOW = 0x7FFF0000


def act_errno(number):
    return 0x00050000 | (number & 0xFFFF)


ATTR_ACT_BADARCH, ATTR_CTL_NNP = 2, 3
CMP_NE, CMP_LT, CMP_EQ, CMP_GT, CMP_MASKED_EQ = 1, 2, 4, 6, 7
PR_SET_NO_NEW_PRIVS = 38


class ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int),
                ("datum_a", ctypes.c_uint64), ("datum_b", ctypes.c_uint64)]


def load_libseccomp():
    try:
        lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    except OSError as error:
        raise LaunchError(f"cannot load libseccomp.so.2 (Debian package libseccomp2): {error}")
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_attr_set.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32]
    lib.seccomp_rule_add_exact_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int,
                                                 ctypes.c_uint, ctypes.POINTER(ArgCmp)]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    lib.seccomp_release.argtypes = [ctypes.c_void_p]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    return lib


class Filter:
    """One seccomp program for the native ABI, like systemd's seccomp_init_for_arch()."""

    def __init__(self, lib, what, default_action, bad_arch=ACT_ALLOW):
        self.lib, self.what = lib, what
        self.ctx = lib.seccomp_init(default_action)
        if not self.ctx:
            raise LaunchError(f"{what}: seccomp_init failed")
        self.check(lib.seccomp_attr_set(self.ctx, ATTR_ACT_BADARCH, bad_arch), "set the bad-arch action")
        self.check(lib.seccomp_attr_set(self.ctx, ATTR_CTL_NNP, 0), "leave no_new_privs to us")

    def check(self, result, doing):
        if result < 0:
            raise LaunchError(f"{self.what}: cannot {doing}: {os.strerror(-result)}")

    def syscall(self, name):
        number = self.lib.seccomp_syscall_resolve_name(name.encode())
        return number if number >= 0 else None  # negative: not a syscall of this ABI

    def rule(self, action, name, *comparisons):
        """Adds `action` for `name` when all (arg, op, a, b) comparisons hold; unknown names are skipped."""
        number = self.syscall(name)
        if number is None:
            return
        array = (ArgCmp * max(len(comparisons), 1))(*[ArgCmp(*c) for c in comparisons])
        self.check(self.lib.seccomp_rule_add_exact_array(self.ctx, action, number, len(comparisons), array),
                   f"add a rule for {name}()")

    def load(self):
        result = self.lib.seccomp_load(self.ctx)
        self.lib.seccomp_release(self.ctx)
        self.check(result, "load the filter")


# --- the filters, one builder per setting --------------------------------------------------------
EPERM = act_errno(errno.EPERM)


def address_families(lib, value):
    deny = value.startswith("~")
    names = value.lstrip("~").split()
    if names == ["none"] and not deny:
        families = set()
    else:
        try:
            families = {int(getattr(socket, name)) for name in names}
        except AttributeError as error:
            raise LaunchError(f"RestrictAddressFamilies={value}: unknown family ({error})")
    f = Filter(lib, "RestrictAddressFamilies", ACT_ALLOW)
    refuse = act_errno(errno.EAFNOSUPPORT)
    if deny:
        for family in sorted(families):
            f.rule(refuse, "socket", (0, CMP_EQ, family, 0))
    elif not families:
        f.rule(refuse, "socket")
    else:
        low, high = min(families), max(families)
        f.rule(refuse, "socket", (0, CMP_LT, low, 0))
        f.rule(refuse, "socket", (0, CMP_GT, high, 0))
        for family in range(low + 1, high):
            if family not in families:
                f.rule(refuse, "socket", (0, CMP_EQ, family, 0))
    return f


def memory_deny_write_execute(lib):
    prot_write, prot_exec, shm_exec = 0x2, 0x4, 0o100000
    f = Filter(lib, "MemoryDenyWriteExecute", ACT_ALLOW)
    both = prot_write | prot_exec
    f.rule(EPERM, "mmap", (2, CMP_MASKED_EQ, both, both))
    f.rule(EPERM, "mprotect", (2, CMP_MASKED_EQ, prot_exec, prot_exec))
    f.rule(EPERM, "pkey_mprotect", (2, CMP_MASKED_EQ, prot_exec, prot_exec))
    f.rule(EPERM, "shmat", (2, CMP_MASKED_EQ, shm_exec, shm_exec))
    return f


def restrict_realtime(lib):
    permitted = {os.SCHED_OTHER, os.SCHED_BATCH, os.SCHED_IDLE}
    highest = max(permitted)
    f = Filter(lib, "RestrictRealtime", ACT_ALLOW)
    for policy in range(highest):
        if policy not in permitted:
            f.rule(EPERM, "sched_setscheduler", (1, CMP_EQ, policy, 0))
    f.rule(EPERM, "sched_setscheduler", (1, CMP_GT, highest, 0))
    return f


def restrict_suid_sgid(lib):
    o_creat, o_tmpfile = os.O_CREAT, 0o20200000
    f = Filter(lib, "RestrictSUIDSGID", ACT_ALLOW)
    for bit in (0o4000, 0o2000):  # S_ISUID, S_ISGID
        for name, mode in (("chmod", 1), ("fchmod", 1), ("fchmodat", 2), ("mkdir", 1), ("mkdirat", 2),
                           ("mknod", 1), ("mknodat", 2), ("creat", 1)):
            f.rule(EPERM, name, (mode, CMP_MASKED_EQ, bit, bit))
        for name, flags in (("open", 1), ("openat", 2)):
            for creating in (o_creat, o_tmpfile):
                f.rule(EPERM, name, (flags, CMP_MASKED_EQ, creating, creating), (flags + 1, CMP_MASKED_EQ, bit, bit))
    return f


def restrict_namespaces(lib):
    # CLONE_NEWTIME, NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET (linux/sched.h)
    every_namespace = 0x80 | 0x20000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000
    f = Filter(lib, "RestrictNamespaces", ACT_ALLOW)
    f.rule(act_errno(errno.ENOSYS), "clone3")
    f.rule(EPERM, "setns")
    for flag in range(32):
        if every_namespace & (1 << flag):
            f.rule(EPERM, "unshare", (0, CMP_MASKED_EQ, 1 << flag, 1 << flag))
            f.rule(EPERM, "clone", (0, CMP_MASKED_EQ, 1 << flag, 1 << flag))
    return f


def deny(lib, what, names):
    f = Filter(lib, what, ACT_ALLOW)
    for name in sorted(names):
        f.rule(EPERM, name)
    return f


def native_architecture_only(lib):
    # No rules: only the bad-arch action, which also covers x32 calls made on x86-64.
    return Filter(lib, "SystemCallArchitectures", ACT_ALLOW, bad_arch=ACT_KILL_PROCESS)


def lock_personality(lib):
    libc = ctypes.CDLL(None, use_errno=True)
    current = libc.personality(0xFFFFFFFF)
    if current < 0:
        raise LaunchError("LockPersonality: cannot read the current personality")
    f = Filter(lib, "LockPersonality", ACT_ALLOW)
    f.rule(EPERM, "personality", (0, CMP_NE, current, 0))  # even the 0xffffffff query, as 252 does
    return f


def system_call_filter(lib, lines, error_number, groups):
    allow_list, chosen = None, set()
    for value in lines:
        if not value:
            allow_list, chosen = None, set()
            continue
        invert = value.startswith("~")
        names = value.lstrip("~").split()
        if any(":" in name for name in names):
            raise LaunchError(f"SystemCallFilter={value}: per-call errno is not supported here")
        if allow_list is None:
            allow_list = not invert
            if allow_list:
                chosen = expand(["@default"], groups)
        if invert == (not allow_list):
            chosen |= expand(names, groups)
        else:
            chosen -= expand(names, groups)
    if allow_list is None:
        return None
    refuse = ACT_KILL_PROCESS if error_number is None else act_errno(error_number)
    f = Filter(lib, "SystemCallFilter", refuse if allow_list else ACT_ALLOW)
    for name in sorted(chosen):
        f.rule(ACT_ALLOW if allow_list else refuse, name)
    return f


def expand(names, groups, seen=None):
    """The syscall names `names` stand for, with @groups resolved through systemd's table."""
    seen = set() if seen is None else seen
    result = set()
    for name in names:
        if name.startswith("@"):
            if name not in groups:
                raise LaunchError(f"unknown syscall group {name}")
            if name not in seen:
                seen.add(name)
                result |= expand(groups[name], groups, seen)
        else:
            result.add(name)
    return result
