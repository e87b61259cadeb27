# Airlock sandbox bootstrap: PID 1 of every sandbox container.
#
# The executor passes this source in the AIRLOCK_BOOT environment variable and starts
# `python3 -I -c "import os;exec(os.environ['AIRLOCK_BOOT'])"`, so that a warm container has a
# Python interpreter loaded and waiting before any job exists. It then:
#
# 1. waits (at most AIRLOCK_IDLE_S seconds, then exits: a forgotten warm container dies by
#    itself) for one frame on stdin: b"AIRLOCK1", a 4-byte big-endian header length, a JSON
#    header {language, args, env, code_len, wall_ms, grace_ms, park_ms, path, files}, then
#    code_len bytes of code, then each file's bytes in the order of `files` ({name, len}), which
#    it writes read-only into the working directory (and makes out/, whose files come back).
#    Everything after the frame is the program's own stdin, until EOF
#    (`services/executor/src/launch.rs` builds the frame and holds a decoder of it). Once the
#    whole frame is in, it writes the start marker on stdout: the executor's proof that the job
#    reached the container (a container whose stdin closed before, because the engine dropped
#    the connection, never runs anything and never shows the marker);
# 2. forks the program: Python code runs in the forked interpreter (no second interpreter
#    start-up), bash code is exec'd from a memfd;
# 3. supervises it as init: reaps every process, and once the program exits (or wall_ms +
#    grace_ms passes: the safety net if the executor is gone) kills everything left in the
#    container;
# 4. when park_ms > 0 (the executor watches from the host), parks: drops the signals the dead
#    program may have sent it, draws a random token, and renames itself "CODE:TOKEN" (the
#    program's exit status, three digits, and the token). The executor reads that name from
#    the host, where it also sees the pids cgroup hold PID 1 alone, and sends SIGUSR2; PID 1
#    then writes the end marker (END_PREFIX + token) on stdout and stderr, behind everything the
#    program wrote, and waits for SIGUSR1 while the executor looks at what the program left.
#    Each wait lasts at most park_ms. When park_ms is 0 (the executor cannot see the host), it
#    writes the end marker with a fresh token on both streams at once, or, in a sealed run
#    (under gVisor, where PID 1 is another user than the program), the marker of the seal's
#    token (drawn after the fork and written behind the start marker before the program may
#    start) with the exit status behind it on stdout. Then it exits with the
#    program's status (128 + signal when it was killed by a signal), which the engine records.
#    Without its end marker behind the output, the executor takes no status for the program's:
#    an output stream the engine cut short ends the run as interrupted.
#
# Nothing the program could write tells the executor anything that counts: a process can
# rename only itself (PID 1 is non-dumpable, and init ignores signals from inside it has no
# handler for), the token is drawn after every process of the program is gone, so the program
# cannot print the marker, and the exit status comes from PID 1's name (or, when the executor
# cannot see the host, from the engine). The program's network attempts, seen by an audit hook
# inside its own interpreter, go to a memfd at fd 9 that the executor reads as an untrusted
# report. Under runc everything here runs as the same unprivileged user as the program; its one
# defence of its own is being non-dumpable (the program cannot ptrace it or read its /proc files)
# and being init (Linux lets no process inside kill it). gVisor does not shield init, so there
# PID 1 runs as root inside gVisor's kernel, with only CAP_SETUID, CAP_SETGID, CAP_SETPCAP,
# CAP_KILL and CAP_DAC_READ_SEARCH (to read out/ after the program, whatever the files' modes),
# and the program's process becomes the unprivileged user (AIRLOCK_RUN_AS) before anything of
# the program runs: a process of another user without capabilities cannot signal it.

import os, sys, signal, json, select, time
# What running a program needs, imported while the container is still idle rather than after
# the job arrived (tokenize and re behind linecache cost milliseconds to import).
import atexit, linecache, traceback, types
# Under gVisor PID 1 digests the files under out/ after the program: hashlib's first import
# costs about 18 ms there, paid while the container waits rather than after the program.
if os.environ.get("AIRLOCK_RUN_AS"):
    import hashlib

MAGIC = b"AIRLOCK1"
ACTIVITY_FD = 9
# Files the program leaves here (relative to its working directory) come back to the client.
OUTPUT_DIR = "out"
# Starts stdout once the job is in, before the program exists. The executor's twin is
# START_MARKER in services/executor/src/tally.rs.
START_MARKER = b"\x00airlock-start\x00"
# Ends each output stream once the program is over, followed by the token (never known to the
# program). The executor's twin is END_PREFIX in services/executor/src/tally.rs.
END_PREFIX = b"\x00airlock-end-"
# Follows the start marker when the frame asks for a sealed run (under gVisor), then the seal's
# token. The executor's twin is SEAL_PREFIX in services/executor/src/tally.rs.
SEAL_PREFIX = b"\x00airlock-seal-"
# Under gVisor, paths that do not exist, opened as markers for gVisor's trace session: by the
# program's process once it has become the program's user (what came before is Airlock's), and
# by PID 1 once the program is over (its point carries the count of points dropped until then).
# The executor's twins are START_PATH and END_PATH in services/executor/src/gvisor_trace/points.rs.
TRACE_START = "/.airlock-trace-start"
TRACE_END = "/.airlock-trace-end"
# The bounds on returned files, as services/executor/src/outputs.rs applies them from the host
# under runc (airlock_protocol::files); under gVisor PID 1 applies them and the executor checks.
OUT_MAX_FILES = 64
OUT_MAX_FILE = 1024 * 1024
OUT_MAX_TOTAL = 2 * 1024 * 1024
OUT_MAX_DEPTH = 8
OUT_MAX_WALK = 10000
OUT_MAX_DIGESTED = 64 * 1024 * 1024
OUT_HEAD = 512


def _prctl(option, value):
    try:
        import ctypes
        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    except Exception:
        return False


def _prctl_dumpable(value):
    _prctl(4, value)  # PR_SET_DUMPABLE


def _idle_too_long(*_):
    os._exit(0)


def _readable(seconds):
    # gVisor cannot poll the engine's stdin pipe (select fails with EPERM): there the read
    # blocks, bounded by a timer whose signal ends the idle bootstrap as the deadline would.
    try:
        ready, _, _ = select.select([0], [], [], seconds)
        return bool(ready)
    except PermissionError:
        signal.signal(signal.SIGALRM, _idle_too_long)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        return True


def _read_exact(n, deadline):
    buf = bytearray()
    while len(buf) < n:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            os._exit(0)
        if not _readable(remaining):
            continue
        chunk = os.read(0, n - len(buf))
        signal.setitimer(signal.ITIMER_REAL, 0)
        if not chunk:
            os._exit(0)
        buf += chunk
    return bytes(buf)


def _supervise(child, header, seal):
    os.close(0)
    deadline = time.monotonic() + (header["wall_ms"] + header["grace_ms"]) / 1000.0
    status = None
    code = None
    overran = False
    while status is None:
        while True:
            try:
                pid, st = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                pid = -1
            if pid <= 0:
                break
            if pid == child:
                status = st
        if status is not None:
            break
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            code = 128 + signal.SIGKILL
            overran = True
            break
        signal.sigtimedwait({signal.SIGCHLD}, min(remaining, 1.0))
    # The program is over: nothing it started may outlive it.
    while True:
        try:
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            break
    if code is None:
        if os.WIFEXITED(status):
            code = os.WEXITSTATUS(status)
        elif os.WIFSIGNALED(status):
            code = 128 + os.WTERMSIG(status)
        else:
            code = 255
    # An executor that is still there kills at wall_ms, long before this safety net: nobody is
    # left to look at the final state, so there is no reason to park, nor to mark the end.
    if not overran:
        if seal is not None:
            # Sealed: the executor knows this token from the head of stdout, and the program never
            # did, so this marker (and the status and files behind it) can only be PID 1's.
            # Every process of the program is gone (killed and reaped above): nothing can change
            # out/ while it is read.
            files = _files_section()
            report = _inside_section()
            _mark(TRACE_END)
            _end_streams(seal, b"%03d" % code + files + report)
        else:
            token = _draw_token()
            if header["park_ms"] <= 0 or not _park(code, token, header["park_ms"] / 1000.0):
                _end_streams(token)
    os._exit(code)


def _end_streams(token, status=b""):
    for fd, tail in ((1, status), (2, b"")):
        view = memoryview(END_PREFIX + token + tail)
        try:
            while view:
                view = view[os.write(fd, view):]
        except OSError:
            pass


def _inside_section():
    """The program's own report (its audit hook's lines in the memfd at ACTIVITY_FD), which the
    host reads from PID 1's file table under runc and cannot under gVisor: ten digits of length,
    then at most its first 64 KiB. The executor parses it as the untrusted report it is."""
    data = b""
    try:
        os.lseek(ACTIVITY_FD, 0, os.SEEK_SET)
        while len(data) < 65536:
            chunk = os.read(ACTIVITY_FD, 65536 - len(data))
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    return b"%010d" % len(data) + data


def _same(opened, listed):
    """Whether a descriptor is the entry lstat listed (and of the same kind)."""
    import stat
    return ((opened.st_dev, opened.st_ino) == (listed.st_dev, listed.st_ino)
            and stat.S_IFMT(opened.st_mode) == stat.S_IFMT(listed.st_mode))


def _open_dir(name, dir_fd):
    """A directory that is not a link. gVisor 2022-12-19 follows a link to a directory despite
    O_NOFOLLOW when O_DIRECTORY is given too, so what was opened is checked against lstat."""
    import stat
    listed = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    if not stat.S_ISDIR(listed.st_mode):
        raise OSError("not a directory")
    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=dir_fd)
    if not _same(os.fstat(fd), listed):
        os.close(fd)
        raise OSError("not the directory listed")
    return fd


def _mark(path):
    """A marker point in gVisor's trace session: the open of a path that does not exist."""
    try:
        os.close(os.open(path, os.O_RDONLY))
    except OSError:
        pass


def _files_section():
    """The files under out/, as PID 1 reads them after the program (under gVisor, where the host
    cannot): a 10-digit length, then per file an 8-digit header length, a JSON header (name,
    size, SHA-256, whether the bytes behind are the content or only its head, why not, and how
    many bytes follow) and those bytes. Read as root inside gVisor (with CAP_DAC_READ_SEARCH,
    as the host reads them under runc) through directory descriptors: no link is followed
    (lstat, O_NOFOLLOW, and what was opened checked against what was listed, at every step, out/
    itself included), nothing but a regular file is opened, and that with O_NONBLOCK, so a FIFO
    swapped in cannot hold PID 1."""
    import stat
    entries = []
    returned = 0
    seen = 0
    try:
        top = _open_dir(OUTPUT_DIR, None)
    except OSError:
        top = None
    dirs = [] if top is None else [(top, "", 0)]
    done = False
    while dirs and not done:
        fd, prefix, depth = dirs.pop(0)
        try:
            names = sorted(os.listdir(fd), key=os.fsencode)
        except OSError:
            names = []
        for name in names:
            seen += 1
            if seen > OUT_MAX_WALK or len(entries) >= OUT_MAX_FILES:
                done = True
                break
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError:
                continue
            rel = prefix + name
            if stat.S_ISDIR(st.st_mode):
                if depth + 1 < OUT_MAX_DEPTH:
                    try:
                        sub = _open_dir(name, fd)
                    except OSError:
                        continue
                    dirs.append((sub, rel + "/", depth + 1))
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            size = st.st_size
            fits = size <= OUT_MAX_FILE and returned + size <= OUT_MAX_TOTAL
            header = {"name": os.fsencode(rel).decode("utf-8", "replace"), "size": size,
                      "sha256": "", "content": False, "omitted": None, "bytes": 0}
            data = b""
            if size > OUT_MAX_DIGESTED:
                header["omitted"] = "undigested"
            else:
                try:
                    f = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd)
                    try:
                        if not _same(os.fstat(f), st):
                            raise OSError("not the file listed")
                        import hashlib  # loaded while idle (above): no cost here
                        digest, head, kept, total = hashlib.sha256(), b"", [], 0
                        while total < OUT_MAX_DIGESTED:
                            chunk = os.read(f, min(1 << 20, OUT_MAX_DIGESTED - total))
                            if not chunk:
                                break
                            digest.update(chunk)
                            if len(head) < OUT_HEAD:
                                head += chunk[:OUT_HEAD - len(head)]
                            if fits:
                                kept.append(chunk)
                            total += len(chunk)
                    finally:
                        os.close(f)
                    header["sha256"] = digest.hexdigest()
                    if fits and total == size:
                        data = b"".join(kept)
                        header["content"] = True
                        returned += len(data)
                    else:
                        data = head
                        header["omitted"] = "over_file" if size > OUT_MAX_FILE else "over_total"
                except OSError as error:
                    header["omitted"] = "unreadable: %s" % (error.strerror or error,)
            header["bytes"] = len(data)
            encoded = json.dumps(header).encode()
            entries.append(b"%08d" % len(encoded) + encoded + data)
        os.close(fd)
    for fd, _, _ in dirs:
        os.close(fd)
    body = b"".join(entries)
    return b"%010d" % len(body) + body


def _draw_token():
    return "".join("abcdefghijklmnopqrstuvwxyz234567"[b % 32] for b in os.urandom(11)).encode()


def _park(code, token, seconds):
    """Shows the end, waits for the executor's look; false when there is no name to show."""
    # Only the executor can signal PID 1 now: what is pending came from the dead program.
    while signal.sigtimedwait({signal.SIGUSR1, signal.SIGUSR2}, 0) is not None:
        pass
    # Without a name to show (prctl unavailable) the executor cannot tell the program is over:
    # the end is marked at once, and it reads the status from the engine.
    if not _prctl(15, b"%03d:%s" % (code, token)):  # PR_SET_NAME
        return False
    # No executor looking within park_ms: exit without the marker (it is gone or stalled, and
    # reads the run as interrupted if it comes back).
    if signal.sigtimedwait({signal.SIGUSR2}, seconds) is None:
        return True
    _end_streams(token)
    signal.sigtimedwait({signal.SIGUSR1}, seconds)
    return True


def _read_files(files, deadline):
    """The request's files, read from the frame: (name, bytes) in the order of `files`."""
    return [(entry["name"], _read_exact(entry["len"], deadline) if entry["len"] else b"") for entry in files]


def _place_files(files):
    """Writes the request's files into the working directory, read-only, and makes out/.

    Runs in the program's process, as the program's user, so that what it finds is its own (as
    out/ must be). Names were checked by the executor (relative paths of plain components);
    O_EXCL and O_NOFOLLOW keep this from writing anywhere else even so. The program could change
    its copies; the audit log keeps the originals by digest."""
    for name, data in files:
        parts = name.split("/")
        directory = "."
        for part in parts[:-1]:
            directory = os.path.join(directory, part)
            try:
                os.mkdir(directory, 0o755)
            except FileExistsError:
                pass
        fd = os.open(os.path.join(directory, parts[-1]),
                     os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o444)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.close(fd)
    try:
        os.mkdir(OUTPUT_DIR, 0o755)
    except FileExistsError:
        pass


def _become_program_user():
    """Under gVisor, PID 1 runs as root in gVisor's own kernel (with only the capabilities to
    change identity and to signal) so that the program, another user, cannot signal it:
    gVisor does not shield init from a SIGKILL sent inside its pid namespace as Linux does.
    The program's process gives all of that up before anything of the program runs: every
    capability out of the bounding set, then groups, group and user (which clears the rest).
    Nothing here may fail quietly: a program that could run with any of it is not started."""
    run_as = os.environ.get("AIRLOCK_RUN_AS")
    if not run_as:
        return
    try:
        uid, gid = (int(part) for part in run_as.split(":"))
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        cap = 0
        while libc.prctl(24, cap, 0, 0, 0) == 0:  # PR_CAPBSET_DROP, until past the last one
            cap += 1
        if ctypes.get_errno() != 22 or cap < 32:  # EINVAL past the last capability
            raise OSError(ctypes.get_errno(), "dropping capability %d from the bounding set" % cap)
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
        if os.getresuid() != (uid, uid, uid) or os.getresgid() != (gid, gid, gid):
            raise OSError("identity is %r %r" % (os.getresuid(), os.getresgid()))
        try:
            os.setuid(0)
        except PermissionError:
            return
        raise OSError("root could be regained")
    except Exception as error:
        try:
            os.write(2, b"airlock: could not become the program's user: %s\n" % str(error).encode())
        finally:
            os._exit(126)


def _start_relay():
    """Read-only internet under gVisor: the container has no network interface, and the run's
    proxy is a unix socket the executor mounts in (AIRLOCK_RELAY="PORT PATH"). A process of
    Airlock's own relays connections to 127.0.0.1:PORT (gVisor's loopback, the program's
    HTTP_PROXY) to that socket, where the proxy checks and records every request; it adds
    nothing the program could not do itself with the socket, and decides nothing. It is bound
    here, before the program exists, so the program cannot take its port; it runs as root
    inside gVisor with no capability at all, so the program (another user) cannot signal or
    trace it, and PID 1 kills it with everything else once the program is over."""
    spec = os.environ.get("AIRLOCK_RELAY")
    if not spec:
        return
    import socket
    try:
        port, path = spec.split(" ", 1)
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", int(port)))
        listener.listen(64)
    except (OSError, ValueError) as error:
        os.write(2, b"airlock: the read-only relay could not listen: %s\n" % str(error).encode())
        return
    if os.fork() != 0:
        listener.close()
        return
    try:
        _prctl(15, b"airlock-relay")  # PR_SET_NAME
        if os.geteuid() == 0:
            _drop_all_capabilities()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        _relay(listener, path)
    except BaseException as error:
        try:
            os.write(2, b"airlock: the read-only relay stopped: %s\n" % str(error).encode())
        finally:
            os._exit(1)
    os._exit(0)


def _drop_all_capabilities():
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    cap = 0
    while libc.prctl(24, cap, 0, 0, 0) == 0:  # PR_CAPBSET_DROP, until past the last one
        cap += 1

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    # _LINUX_CAPABILITY_VERSION_3: two 32-bit words each of effective, permitted, inheritable.
    if libc.capset(ctypes.byref(Header(0x20080522, 0)), (ctypes.c_uint32 * 6)()) != 0:
        raise OSError(ctypes.get_errno(), "capset")
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "no_new_privs")


def _relay(listener, path, window=1 << 16):
    """Copies bytes both ways between each accepted connection and a new connection to the
    unix socket at `path`, in one thread (gVisor's poll works on both kinds of socket). A side
    whose peer already holds `window` bytes unsent is not read; a read end is passed on as a
    write shutdown once everything before it is sent; an error closes both."""
    import selectors, socket
    sel = selectors.DefaultSelector()
    listener.setblocking(False)
    sel.register(listener, selectors.EVENT_READ)
    peer, unsent, ended, watched = {}, {}, set(), set()

    def watch(x, wanted):
        # A socket with nothing to wait for leaves the selector (an ended one would read as
        # ready for ever), and comes back when its peer gives it bytes to send.
        if not wanted:
            if x in watched:
                sel.unregister(x)
                watched.discard(x)
        elif x in watched:
            sel.modify(x, wanted)
        else:
            sel.register(x, wanted)
            watched.add(x)

    def close(s):
        for x in (s, peer.get(s)):
            if x in peer:
                watch(x, 0)
                x.close()
                del peer[x], unsent[x]
                ended.discard(x)

    while True:
        for key, events in sel.select():
            s = key.fileobj
            if s is listener:
                try:
                    accepted, _ = listener.accept()
                except OSError:
                    continue
                upstream = socket.socket(socket.AF_UNIX)
                try:
                    upstream.connect(path)
                except OSError:
                    accepted.close()
                    upstream.close()
                    continue
                for x, y in ((accepted, upstream), (upstream, accepted)):
                    x.setblocking(False)
                    peer[x], unsent[x] = y, bytearray()
                    watch(x, selectors.EVENT_READ)
                continue
            if s not in peer:
                continue
            other = peer[s]
            try:
                if events & selectors.EVENT_WRITE and unsent[s]:
                    del unsent[s][:s.send(unsent[s])]
                    if not unsent[s] and other in ended:
                        s.shutdown(socket.SHUT_WR)
                if events & selectors.EVENT_READ:
                    data = s.recv(window)
                    if data:
                        unsent[other] += data
                    else:
                        ended.add(s)
                        if not unsent[other]:
                            other.shutdown(socket.SHUT_WR)
            except OSError:
                close(s)
                continue
            if s in ended and other in ended and not unsent[s] and not unsent[other]:
                close(s)
                continue
            for x in (s, other):
                wanted = 0
                if x not in ended and len(unsent[peer[x]]) < window:
                    wanted |= selectors.EVENT_READ
                if unsent[x]:
                    wanted |= selectors.EVENT_WRITE
                watch(x, wanted)


def _save_open_figures():
    """Figures a program left open in matplotlib are saved to out/ as PNG (figure-1.png, ...),
    so that a plot shown with plt.show() under the Agg backend still comes back."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is None:
        return
    try:
        for number in pyplot.get_fignums():
            name = os.path.join(OUTPUT_DIR, "figure-%d.png" % number)
            if not os.path.exists(name):
                pyplot.figure(number).savefig(name)
    except Exception as error:
        print("airlock: could not save the open matplotlib figures: %r" % (error,), file=sys.stderr)


def _main():
    _prctl_dumpable(0)
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT,
              signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU):
        signal.signal(s, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD, signal.SIGUSR1, signal.SIGUSR2})
    idle_deadline = time.monotonic() + float(os.environ.get("AIRLOCK_IDLE_S", "120"))
    magic = _read_exact(len(MAGIC) + 4, idle_deadline)
    if magic[: len(MAGIC)] != MAGIC:
        os._exit(254)
    frame_deadline = time.monotonic() + 30.0
    header = json.loads(_read_exact(int.from_bytes(magic[len(MAGIC):], "big"), frame_deadline))
    code = _read_exact(header["code_len"], frame_deadline) if header["code_len"] else b""
    files = _read_files(header.get("files", ()), frame_deadline)
    _start_relay()
    try:
        os.write(1, START_MARKER)
    except OSError:
        os._exit(254)
    activity = os.memfd_create("airlock-activity")
    if activity != ACTIVITY_FD:
        os.dup2(activity, ACTIVITY_FD)
        os.close(activity)
    # A sealed run (the executor asks for it under gVisor, where PID 1 is another user than the
    # program) ends without waiting for the engine: its token is drawn after the fork, so it is
    # never in the program's memory, and written on stdout before the program may start, which
    # the program can write but not read back. Only PID 1 can then write its end marker.
    sealed = bool(header.get("seal")) and bool(os.environ.get("AIRLOCK_RUN_AS"))
    if sealed:
        go_read, go_write = os.pipe()
    child = os.fork()
    if child == 0:
        _become_program_user()
        if sealed:
            _mark(TRACE_START)
        if sealed:
            os.close(go_write)
            if os.read(go_read, 1) != b"g":
                os._exit(254)
            os.close(go_read)
        _place_files(files)
        return header, code
    del files
    seal = None
    if sealed:
        os.close(go_read)
        seal = _draw_token()
        try:
            os.write(1, SEAL_PREFIX + seal)
            os.write(go_write, b"g")
        except OSError:
            os._exit(254)
        os.close(go_write)
    _supervise(child, header, seal)


def _child_environment(header):
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRLOCK_")}
    # Output reaches the client as it is written, without the program's help: Python
    # interpreters the program starts (from bash, or a subprocess) do not buffer their pipes.
    # A request may still set PYTHONUNBUFFERED itself.
    env["PYTHONUNBUFFERED"] = "1"
    env.update(header["env"])
    return env


def _reset_signals(python):
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR2,
              signal.SIGTSTP, signal.SIGTTIN, signal.SIGTTOU):
        signal.signal(s, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler if python else signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN if python else signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, set())


def _run_bash(header, code):
    os.close(ACTIVITY_FD)
    script = os.memfd_create("main.sh", 0)
    os.write(script, code)
    os.lseek(script, 0, os.SEEK_SET)
    if script != 3:
        os.dup2(script, 3)
        os.close(script)
    _reset_signals(False)
    os.execve("/bin/bash", ["bash", "/dev/fd/3"] + header["args"], _child_environment(header))


def _record_network(event, args):
    if event in ("socket.connect", "socket.sendto", "socket.sendmsg", "socket.bind",
                 "socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr"):
        try:
            detail = repr(args[1:] if event.startswith("socket.") and event not in (
                "socket.getaddrinfo", "socket.gethostbyname", "socket.gethostbyaddr") else args)[:200]
            os.write(ACTIVITY_FD, (json.dumps({"event": event, "detail": detail}) + "\n").encode())
        except Exception:
            pass


def _run_python(header, code):
    """Runs the program in this forked interpreter; returns its exit status."""
    env = _child_environment(header)
    os.environ.clear()
    os.environ.update(env)
    sys.argv = ["main.py"] + header["args"]
    sys.path[:0] = [os.getcwd()] + header["path"]
    main = types.ModuleType("__main__")
    main.__file__ = "main.py"
    main.__builtins__ = __builtins__
    sys.modules["__main__"] = main
    text = code.decode("utf-8", "replace")
    linecache.cache["main.py"] = (len(text), None, text.splitlines(True), "main.py")
    sys.addaudithook(_record_network)
    # The program runs in this interpreter, started with -I (which ignores PYTHONUNBUFFERED):
    # its pipes are line-buffered here instead, so each line it prints streams as it happens.
    for stream in (sys.stdout, sys.stderr):
        stream.reconfigure(line_buffering=True)
    _reset_signals(True)
    try:
        compiled = compile(code, "main.py", "exec")
        exec(compiled, main.__dict__)
    except SystemExit as exit:
        _save_open_figures()
        return _exit_status(exit.code)
    except BaseException as error:
        tb = error.__traceback__
        # Hide this bootstrap's own frame, so the traceback reads as the program's.
        if tb is not None and tb.tb_frame.f_code.co_filename != "main.py":
            tb = tb.tb_next
        error = error.with_traceback(tb)
        if sys.excepthook is sys.__excepthook__:
            # The traceback module reads the program's source from linecache; the built-in
            # hook would look for a main.py file that does not exist.
            traceback.print_exception(type(error), error, tb)
        else:
            sys.excepthook(type(error), error, tb)
        return 130 if isinstance(error, KeyboardInterrupt) else 1
    _save_open_figures()
    return 0


def _exit_status(code):
    """The status `sys.exit(code)` ends an interpreter with."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        print(code, file=sys.stderr)
    except Exception:
        pass
    return 1


def _exit_fast(status):
    """Ends the program's process as interpreter shutdown would, minus its teardown.

    What a program can see of shutdown is kept, in CPython's order: non-daemon threads are
    joined, atexit handlers run, buffered output is flushed (a failed flush makes the status
    120, as in CPython). Tearing down every module's objects is not: in a forked interpreter it
    touches every page shared with PID 1 (a copy each) and took longer than the whole of a small
    program, for a process that is about to be gone.
    """
    threading = sys.modules.get("threading")
    if threading is not None:
        try:
            threading._shutdown()
        except BaseException:
            pass
    try:
        atexit._run_exitfuncs()
    except BaseException:
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except BaseException:
            if status == 0:
                status = 120
    os._exit(status)


_header, _code = _main()
_prctl_dumpable(1)
del _main
if _header["language"] == "bash":
    _run_bash(_header, _code)
else:
    _h, _c = _header, _code
    del _header, _code
    _exit_fast(_run_python(_h, _c))
