//! Airlock's seccomp profile in real containers: every call it refuses is tried from Python and
//! from bash and must fail with EPERM (ENOSYS for `clone3`), and ordinary programs (the assessor
//! corpus's benign scripts, threads, subprocesses, multiprocessing, `/tmp` I/O, sockets between
//! processes) must behave exactly as they do under the engine's own default profile.
//!
//! Each probe is chosen so that, unfiltered, it succeeds or fails another way: the same probes
//! run in a control container without any seccomp filter (otherwise hardened the same), and the
//! test checks that the calls Docker's default allows are indeed ones the control lets through.

mod common;

use airlock_executor::seccomp;
use airlock_protocol::{Language, Runtime, ViolationKind};
use common::{config, job, run_ok, start, started, text};
use std::collections::BTreeMap;
use std::process::{Command, Stdio};

/// One refused call and arguments that make it succeed, or fail otherwise than EPERM, when it is
/// let through. Arguments: an integer, `buf` (4 KiB of zeros the call may write to), `s:TEXT` (a
/// C string), `self` (the caller's pid).
struct Probe {
    name: &'static str,
    nr: libc::c_long,
    args: &'static [&'static str],
}

const fn probe(name: &'static str, nr: libc::c_long, args: &'static [&'static str]) -> Probe {
    Probe { name, nr, args }
}

fn probes() -> Vec<Probe> {
    use libc::*;
    let mut probes = vec![
        probe("io_uring_setup", SYS_io_uring_setup, &["1", "buf"]),
        probe("io_uring_enter", SYS_io_uring_enter, &["-1", "0", "0", "0", "0", "0"]),
        probe("io_uring_register", SYS_io_uring_register, &["-1", "0", "0", "0"]),
        probe("ptrace", SYS_ptrace, &["0"]),
        probe("personality(ADDR_NO_RANDOMIZE)", SYS_personality, &["262144"]),
        probe("personality(READ_IMPLIES_EXEC)", SYS_personality, &["4194304"]),
        probe("fanotify_mark", SYS_fanotify_mark, &["-1", "0", "0", "-100", "0"]),
        probe("memfd_secret", SYS_memfd_secret, &["0"]),
        probe("process_mrelease", SYS_process_mrelease, &["-1", "0"]),
        probe("remap_file_pages", SYS_remap_file_pages, &["0", "0", "0", "0", "0"]),
        probe("socket(AF_VSOCK)", SYS_socket, &["40", "1", "0"]),
        probe("socket(AF_ALG)", SYS_socket, &["38", "5", "0"]),
        probe("socket(AF_PACKET)", SYS_socket, &["17", "3", "0"]),
        probe("socket(AF_KEY)", SYS_socket, &["15", "3", "2"]),
        probe("clone(CLONE_NEWUSER)", SYS_clone, &["268435473", "0", "0", "0", "0"]),
        probe("clone(CLONE_NEWNET)", SYS_clone, &["1073741841", "0", "0", "0", "0"]),
        probe("userfaultfd", SYS_userfaultfd, &["1"]),
        probe("perf_event_open", SYS_perf_event_open, &["buf", "0", "-1", "-1", "0"]),
        probe("bpf", SYS_bpf, &["0", "0", "0"]),
        probe("keyctl", SYS_keyctl, &["0", "-3", "0"]),
        probe("add_key", SYS_add_key, &["s:user", "s:airlock", "s:x", "1", "-2"]),
        probe("request_key", SYS_request_key, &["s:user", "s:airlock-none", "0", "0"]),
        probe("kexec_load", SYS_kexec_load, &["0", "0", "0", "0"]),
        probe("kexec_file_load", SYS_kexec_file_load, &["-1", "-1", "0", "0", "0"]),
        probe("init_module", SYS_init_module, &["0", "0", "s:"]),
        probe("finit_module", SYS_finit_module, &["-1", "s:", "0"]),
        probe("delete_module", SYS_delete_module, &["s:airlock", "0"]),
        probe("unshare", SYS_unshare, &["268435456"]),
        probe("setns", SYS_setns, &["-1", "0"]),
        probe("mount", SYS_mount, &["s:none", "s:/tmp", "s:tmpfs", "0", "0"]),
        probe("umount2", SYS_umount2, &["s:/tmp", "0"]),
        probe("pivot_root", SYS_pivot_root, &["s:/tmp", "s:/tmp"]),
        probe("chroot", SYS_chroot, &["s:/tmp"]),
        probe("fsopen", SYS_fsopen, &["s:tmpfs", "0"]),
        probe("fsmount", SYS_fsmount, &["-1", "0", "0"]),
        probe("fspick", SYS_fspick, &["-100", "s:/", "0"]),
        probe("move_mount", SYS_move_mount, &["-1", "s:", "-1", "s:", "0"]),
        probe("open_tree", SYS_open_tree, &["-100", "s:/tmp", "0"]),
        probe("mount_setattr", SYS_mount_setattr, &["-1", "s:", "0", "0", "0"]),
        probe("open_by_handle_at", SYS_open_by_handle_at, &["-1", "buf", "0"]),
        probe(
            "name_to_handle_at",
            SYS_name_to_handle_at,
            &["-100", "s:/tmp", "buf", "buf", "0"],
        ),
        probe(
            "process_vm_readv",
            SYS_process_vm_readv,
            &["self", "0", "0", "0", "0", "0"],
        ),
        probe(
            "process_vm_writev",
            SYS_process_vm_writev,
            &["self", "0", "0", "0", "0", "0"],
        ),
        probe("process_madvise", SYS_process_madvise, &["-1", "0", "0", "0", "0"]),
        probe("kcmp", SYS_kcmp, &["self", "self", "0", "0", "0"]),
        probe("pidfd_getfd", SYS_pidfd_getfd, &["-1", "0", "0"]),
        probe("swapon", SYS_swapon, &["s:/tmp/swap", "0"]),
        probe("swapoff", SYS_swapoff, &["s:/tmp/swap"]),
        probe("reboot", SYS_reboot, &["0", "0", "0", "0"]),
        probe("acct", SYS_acct, &["0"]),
        probe("syslog", SYS_syslog, &["10", "0", "0"]),
        probe("ioperm", SYS_ioperm, &["0", "1", "1"]),
        probe("settimeofday", SYS_settimeofday, &["0", "0"]),
        probe("clock_settime", SYS_clock_settime, &["0", "buf"]),
        probe("quotactl", SYS_quotactl, &["0", "0", "0", "0"]),
        probe("lookup_dcookie", SYS_lookup_dcookie, &["0", "0", "0"]),
        probe("vhangup", SYS_vhangup, &[]),
        probe("mbind", SYS_mbind, &["0", "0", "0", "0", "0", "0"]),
        probe("set_mempolicy", SYS_set_mempolicy, &["0", "0", "0"]),
        probe("migrate_pages", SYS_migrate_pages, &["0", "0", "0", "0"]),
        probe("move_pages", SYS_move_pages, &["0", "0", "0", "0", "0", "0"]),
        probe("sethostname", SYS_sethostname, &["s:x", "1"]),
        probe("setdomainname", SYS_setdomainname, &["s:x", "1"]),
        probe("uselib", SYS_uselib, &["s:/nonexistent"]),
        probe("clone3", SYS_clone3, &["buf", "88"]),
    ];
    #[cfg(target_arch = "x86_64")]
    probes.extend([
        probe("iopl", SYS_iopl, &["3"]),
        probe("modify_ldt", SYS_modify_ldt, &["0", "buf", "16"]),
    ]);
    probes
}

/// The call names the profile's tables list as refused, each of which must have a probe here.
#[test]
fn every_refusal_in_the_profile_has_a_probe() {
    let probed: Vec<&str> = probes().iter().map(|p| p.name).collect();
    for denied in seccomp::DENIED {
        if cfg!(not(target_arch = "x86_64")) && ["iopl", "modify_ldt"].contains(&denied.name) {
            continue;
        }
        assert!(
            probed
                .iter()
                .any(|p| *p == denied.name || p.starts_with(&format!("{}(", denied.name))),
            "{} is refused by the profile but never tried",
            denied.name
        );
    }
}

/// The probes as a Python program: one line per probe, `name<TAB>return value<TAB>errno`.
fn python_prober(probes: &[Probe]) -> String {
    let mut program = String::from(
        "import ctypes, os, sys\n\
         libc = ctypes.CDLL(None, use_errno=True)\n\
         libc.syscall.restype = ctypes.c_long\n\
         def arg(a):\n\
         \x20   if a == 'buf': return ctypes.create_string_buffer(4096)\n\
         \x20   if a == 'self': return ctypes.c_long(os.getpid())\n\
         \x20   if a.startswith('s:'): return ctypes.c_char_p(a[2:].encode())\n\
         \x20   return ctypes.c_long(int(a))\n\
         def probe(name, nr, *args):\n\
         \x20   if name == 'ptrace':\n\
         \x20       # Let through, PTRACE_TRACEME would leave this process traced: probe it in a child.\n\
         \x20       child = os.fork()\n\
         \x20       if child:\n\
         \x20           os.waitpid(child, 0)\n\
         \x20           return\n\
         \x20   ctypes.set_errno(0)\n\
         \x20   r = libc.syscall(ctypes.c_long(nr), *[arg(a) for a in args])\n\
         \x20   e = ctypes.get_errno()\n\
         \x20   if r == 0 and name.startswith('clone'):\n\
         \x20       os._exit(0)  # the child of a clone the control let through\n\
         \x20   print(name, r, e if r == -1 else 0, sep='\\t', flush=True)\n\
         \x20   if name == 'ptrace':\n\
         \x20       os._exit(0)\n",
    );
    for p in probes {
        let args: Vec<String> = p.args.iter().map(|a| format!("{a:?}")).collect();
        program.push_str(&format!("probe({:?}, {}, {})\n", p.name, p.nr, args.join(", ")));
    }
    program
}

/// The probes from bash: each is one perl process (`syscall`) that bash starts, plus the
/// util-linux commands a shell script would use.
fn bash_prober(probes: &[Probe]) -> String {
    let mut script = format!(
        "cat > /tmp/probe.pl <<'PERL'\n\
         my $name = shift;\n\
         my @a = map {{ $_ eq 'buf' ? \"\\0\" x 4096 : /^s:(.*)$/s ? $1 : $_ eq 'self' ? $$ : $_ + 0 }} @ARGV;\n\
         $! = 0;\n\
         my $r = syscall(shift @a, @a);\n\
         my $e = $! + 0;\n\
         syscall({exit}, 0) if $r == 0 && $name =~ /^clone/;\n\
         print join(\"\\t\", $name, $r, $r == -1 ? $e : 0), \"\\n\";\n\
         PERL\n",
        exit = libc::SYS_exit
    );
    for p in probes {
        let args: Vec<String> = p.args.iter().map(|a| format!("'{a}'")).collect();
        script.push_str(&format!(
            "perl /tmp/probe.pl '{}' {} {}\n",
            p.name,
            p.nr,
            args.join(" ")
        ));
    }
    script.push_str(
        "for cmd in 'unshare -U true' 'unshare -n true' 'mount -t tmpfs none /tmp' 'chroot /tmp /bin/true'; do\n\
         \x20 out=$($cmd 2>&1); printf 'command %s\\t%s\\t%s\\n' \"$cmd\" \"$?\" \"$out\"\n\
         done\n",
    );
    script
}

/// `name -> (return value, errno)` from a prober's output.
fn results(stdout: &str) -> BTreeMap<String, (i64, i64)> {
    stdout
        .lines()
        .filter(|l| !l.starts_with("command "))
        .filter_map(|line| {
            let mut fields = line.split('\t');
            let name = fields.next()?.to_owned();
            let ret = fields.next()?.parse().ok()?;
            let errno = fields.next()?.parse().ok()?;
            Some((name, (ret, errno)))
        })
        .collect()
}

/// Runs `program` on stdin of a container hardened as the sandbox's but without any seccomp
/// filter: what the calls do when nothing refuses them.
fn control(runtime: Runtime, interpreter: &str, program: &str) -> String {
    use std::io::Write as _;
    let mut child = Command::new("docker")
        .args(["run", "--rm", "-i", "--network", "none", "--cap-drop", "ALL"])
        .args([
            "--security-opt",
            "no-new-privileges",
            "--security-opt",
            "seccomp=unconfined",
        ])
        .args([
            "--read-only",
            "--user",
            "1000:1000",
            "--tmpfs",
            "/tmp:rw,size=16m,mode=1777",
        ])
        .arg(format!("--runtime={}", runtime.as_str()))
        .args([airlock_executor::DEFAULT_IMAGE, interpreter, "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the docker CLI");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(program.as_bytes())
        .expect("the control's stdin");
    let output = child.wait_with_output().expect("the control container");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

const EPERM: i64 = libc::EPERM as i64;
const ENOSYS: i64 = libc::ENOSYS as i64;

/// Checks each probe's result under Airlock's profile; returns the failures.
fn refusals_missing(probes: &[Probe], got: &BTreeMap<String, (i64, i64)>) -> Vec<String> {
    let mut missing = Vec::new();
    for p in probes {
        match got.get(p.name) {
            None => missing.push(format!("{}: no result", p.name)),
            Some(&(-1, ENOSYS)) if p.name == "clone3" => {}
            Some(&(-1, errno)) if p.name != "clone3" && (errno == EPERM || errno == ENOSYS) => {}
            Some(other) => missing.push(format!("{}: {other:?}", p.name)),
        }
    }
    missing
}

async fn refused_calls_fail_from_python_and_bash(runtime: Runtime) {
    let probes = probes();
    let mut cfg = config(&format!("seccomp-{}", runtime.as_str()));
    cfg.pool.enabled = false;
    let (sandbox, leaks) = start(cfg).await;
    let quota = sandbox.config().quotas.untrusted;
    for (language, program) in [
        (Language::Python, python_prober(&probes)),
        (Language::Bash, bash_prober(&probes)),
    ] {
        let (report, events) = run_ok(&sandbox, job(language, &program, quota)).await;
        assert_eq!(started(&events).seccomp, Some(seccomp::digest(runtime)));
        let stdout = text(&report.stdout);
        let got = results(&stdout);
        let missing = refusals_missing(&probes, &got);
        assert!(
            missing.is_empty(),
            "{language:?} under {runtime:?}: calls not refused with EPERM/ENOSYS: {missing:#?}\nstderr: {}",
            text(&report.stderr)
        );
        if language == Language::Bash {
            for line in stdout.lines().filter(|l| l.starts_with("command ")) {
                let fields: Vec<&str> = line.split('\t').collect();
                assert!(
                    fields.get(1).is_some_and(|status| *status != "0"),
                    "{line}: a namespace or mount command succeeded"
                );
            }
        }
    }
    sandbox.shutdown().await;
    leaks.assert_none();

    // The control shows the profile is what refuses the calls Docker's default lets through.
    let unfiltered = results(&control(runtime, "python3", &python_prober(&probes)));
    if runtime == Runtime::Runc {
        for name in [
            "io_uring_setup",
            "personality(ADDR_NO_RANDOMIZE)",
            "ptrace",
            "keyctl",
            "add_key",
        ] {
            let result = unfiltered.get(name).copied();
            assert!(
                result.is_some_and(|(ret, errno)| ret >= 0 || (errno != EPERM && errno != ENOSYS)),
                "{name} without a filter gave {result:?}: the probe cannot tell the profile's refusal apart"
            );
        }
    }
    let through: Vec<&String> = unfiltered
        .iter()
        .filter(|(_, (ret, errno))| *ret >= 0 || (*errno != EPERM && *errno != ENOSYS))
        .map(|(name, _)| name)
        .collect();
    eprintln!("{runtime:?}: without a filter these calls get through: {through:?}");
}

#[tokio::test]
async fn refused_calls_fail_with_eperm_from_python_and_bash() {
    refused_calls_fail_from_python_and_bash(Runtime::Runc).await;
}

/// A 32-bit system call (`int 0x80`) from a 64-bit process matches no architecture of the
/// profile: the process is killed (SIGSYS) instead of reaching the kernel's compat entry.
#[cfg(target_arch = "x86_64")]
#[tokio::test]
async fn a_32_bit_system_call_never_reaches_the_kernel() {
    let (sandbox, leaks) = start(config("seccomp-int80")).await;
    let quota = sandbox.config().quotas.untrusted;
    let program = "import ctypes, mmap, os\n\
        code = bytes([0xb8, 20, 0, 0, 0, 0xcd, 0x80, 0xc3])  # mov eax, 20 (getpid); int 0x80; ret\n\
        page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)\n\
        page.write(code)\n\
        call = ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(page)))\n\
        child = os.fork()\n\
        if child == 0:\n\
        \x20   got = call()\n\
        \x20   print('ESCAPED int 0x80 returned', got, 'pid', os.getpid(), flush=True)\n\
        \x20   os._exit(0)\n\
        _, status = os.waitpid(child, 0)\n\
        print('signal', os.WTERMSIG(status) if os.WIFSIGNALED(status) else None)\n";
    let (report, _) = run_ok(&sandbox, job(Language::Python, program, quota)).await;
    assert_eq!(
        text(&report.stdout),
        format!("signal {}\n", libc::SIGSYS),
        "{}",
        text(&report.stderr)
    );
    sandbox.shutdown().await;
    leaks.assert_none();
}

/// Ordinary programs, each printing what it did; run under the profile they must print exactly
/// that.
const ORDINARY: &[(&str, &str, &str)] = &[
    (
        "threads",
        "import threading\nout = []\nts = [threading.Thread(target=out.append, args=(i,)) for i in range(8)]\n[t.start() for t in ts]; [t.join() for t in ts]\nprint(sorted(out))\n",
        "[0, 1, 2, 3, 4, 5, 6, 7]\n",
    ),
    (
        "thread pool",
        "from concurrent.futures import ThreadPoolExecutor\nwith ThreadPoolExecutor(4) as pool:\n    print(sum(pool.map(lambda x: x * x, range(100))))\n",
        "328350\n",
    ),
    (
        "subprocesses and pipes",
        "import subprocess\nr = subprocess.run(['sh', '-c', 'echo hi; echo err >&2; exit 3'], capture_output=True, text=True)\nprint(r.returncode, r.stdout.strip(), r.stderr.strip())\nprint(subprocess.check_output('ls / | grep -c tmp', shell=True, text=True).strip())\n",
        "3 hi err\n1\n",
    ),
    (
        "multiprocessing pool (fork, semaphores in /dev/shm, pipes)",
        "import multiprocessing as mp\nif __name__ == '__main__':\n    with mp.Pool(2) as pool:\n        print(pool.map(abs, [-1, -2, -3]))\n    q = mp.Queue(); p = mp.Process(target=q.put, args=('queued',)); p.start(); print(q.get()); p.join()\n",
        "[1, 2, 3]\nqueued\n",
    ),
    (
        "/tmp files, directories, links, mmap",
        "import os, mmap, shutil, tempfile\nd = tempfile.mkdtemp()\nfor i in range(200):\n    open(os.path.join(d, f'f{i}'), 'w').write('x' * i)\nos.symlink(os.path.join(d, 'f5'), os.path.join(d, 'link'))\nos.rename(os.path.join(d, 'f6'), os.path.join(d, 'g6'))\nwith open(os.path.join(d, 'f100'), 'r+b') as f:\n    m = mmap.mmap(f.fileno(), 0); m[0:1] = b'y'; m.flush(); m.close()\nprint(len(os.listdir(d)), open(os.path.join(d, 'link')).read(), open(os.path.join(d, 'f100')).read(2))\nshutil.rmtree(d); print(os.path.exists(d))\n",
        "201 xxxxx yx\nFalse\n",
    ),
    (
        "sqlite, zlib, tar, hashes, json",
        "import sqlite3, zlib, tarfile, hashlib, json, io\ndb = sqlite3.connect('/tmp/t.db'); db.execute('create table t(x)'); db.executemany('insert into t values (?)', [(i,) for i in range(10)]); db.commit()\nprint(db.execute('select sum(x) from t').fetchone()[0])\nprint(len(zlib.decompress(zlib.compress(b'a' * 10000))))\nbuf = io.BytesIO()\nwith tarfile.open(fileobj=buf, mode='w:gz') as tar:\n    tar.add('/tmp/t.db', arcname='t.db')\nprint(tarfile.open(fileobj=io.BytesIO(buf.getvalue())).getnames())\nprint(hashlib.sha256(b'airlock').hexdigest()[:12], json.dumps({'a': [1, 2]}))\n",
        "45\n10000\n['t.db']\ne17ff958e1a3 {\"a\": [1, 2]}\n",
    ),
    (
        "sockets between processes, select, epoll, asyncio, signals, timers",
        "import socket, select, signal, asyncio, os, time\na, b = socket.socketpair(); a.send(b'ping'); print(b.recv(4))\nsrv = socket.socket(); srv.bind(('127.0.0.1', 0)); srv.listen(); c = socket.create_connection(srv.getsockname()); s, _ = srv.accept(); c.send(b'tcp'); print(s.recv(3))\nep = select.epoll(); ep.register(s.fileno(), select.EPOLLIN); c.send(b'x'); print(len(ep.poll(1)))\nprint(socket.getaddrinfo('127.0.0.1', 80, socket.AF_INET)[0][4], socket.if_nameindex())\nsignal.signal(signal.SIGALRM, lambda *_: print('alarm')); signal.setitimer(signal.ITIMER_REAL, 0.05); time.sleep(0.2)\nasync def main():\n    await asyncio.sleep(0.01); return 'async'\nprint(asyncio.run(main()))\n",
        "b'ping'\nb'tcp'\n1\n('127.0.0.1', 80) [(1, 'lo')]\nalarm\nasync\n",
    ),
    (
        "bash pipelines, subshells, background jobs",
        "#!bash\nseq 1 1000 | awk '{s += $1} END {print s}'\n( cd /tmp && mkdir -p a/b && echo ok > a/b/c && cat a/b/c )\nsleep 0.1 & wait $!; echo \"waited $?\"\nsort <<< $'b\\na' | tr '\\n' ' '; echo\n",
        "500500\nok\nwaited 0\na b \n",
    ),
];

async fn ordinary_programs_work(runtime: Runtime) {
    let (sandbox, leaks) = start(config(&format!("ordinary-{}", runtime.as_str()))).await;
    let mut quota = sandbox.config().quotas.untrusted;
    quota.wall_ms = 30_000;
    for (what, code, expected) in ORDINARY {
        let (language, code) = match code.strip_prefix("#!bash\n") {
            Some(bash) => (Language::Bash, bash),
            None => (Language::Python, *code),
        };
        let (report, _) = run_ok(&sandbox, job(language, code, quota)).await;
        assert_eq!(
            (report.exit_code, text(&report.stdout).as_str()),
            (Some(0), *expected),
            "{what} under {runtime:?}: {}",
            text(&report.stderr)
        );
    }
    sandbox.shutdown().await;
    leaks.assert_none();
}

#[tokio::test]
async fn ordinary_programs_work_under_the_profile() {
    ordinary_programs_work(Runtime::Runc).await;
}

/// What reads as a refusal by the kernel in a program's output.
fn refusal_words(output: &str) -> Vec<&'static str> {
    [
        "Operation not permitted",
        "PermissionError",
        "Function not implemented",
        "Bad system call",
    ]
    .into_iter()
    .filter(|w| output.contains(w))
    .collect()
}

/// The assessor corpus's benign scripts, each run under the profile and under the engine's own
/// default profile (otherwise hardened the same): the same exit status, and no refusal the
/// default profile would not also have made. Most need a package or a network the sandbox does not
/// have, and fail the same way under both.
#[tokio::test]
async fn the_corpus_benign_scripts_behave_as_under_the_engine_default_profile() {
    let corpus = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/assessor-corpus/benign");
    let mut scripts: Vec<_> = ["py", "sh"]
        .iter()
        .flat_map(|dir| std::fs::read_dir(corpus.join(dir)).expect("the benign corpus"))
        .map(|entry| entry.expect("a corpus entry").path())
        .collect();
    scripts.sort();
    assert!(scripts.len() >= 40, "{} benign scripts", scripts.len());
    let (sandbox, leaks) = start(config("corpus")).await;
    let mut quota = sandbox.config().quotas.untrusted;
    quota.wall_ms = 4000;
    let wall_ms = quota.wall_ms;
    let mut differences = Vec::new();
    for script in &scripts {
        let code = std::fs::read_to_string(script).expect("a script");
        let control_code = code.clone();
        let (language, interpreter) = if script.extension().is_some_and(|e| e == "sh") {
            (Language::Bash, "bash")
        } else {
            (Language::Python, "python3")
        };
        let (report, _) = run_ok(&sandbox, job(language, &code, quota)).await;
        // A program still waiting at the wall time (a server, a retry loop) ends there under both.
        let exit_code = match &report.violation {
            Some(v) if v.kind == ViolationKind::Timeout => Some(TIMED_OUT),
            _ => report.exit_code,
        };
        let ours = format!("{}{}", text(&report.stdout), text(&report.stderr));
        let (status, theirs) = tokio::task::spawn_blocking(move || engine_default(interpreter, &control_code, wall_ms))
            .await
            .expect("the default-profile run");
        let new_refusals: Vec<_> = refusal_words(&ours)
            .into_iter()
            .filter(|w| !theirs.contains(w))
            .collect();
        if exit_code != status || !new_refusals.is_empty() {
            differences.push(format!(
                "{}: exit {exit_code:?} vs {status:?} under the default profile, refusals {new_refusals:?}\n{ours}",
                script.display(),
            ));
        }
    }
    sandbox.shutdown().await;
    leaks.assert_none();
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

/// The exit status `timeout` gives a program it stopped, and what a timeout violation counts as.
const TIMED_OUT: i64 = 124;

/// Runs `code` with the engine's own default seccomp profile, hardened as the sandbox, for at
/// most `wall_ms` (then its status is [`TIMED_OUT`]). Returns its exit status and output.
fn engine_default(interpreter: &str, code: &str, wall_ms: u64) -> (Option<i64>, String) {
    let script_dir = tempfile::tempdir().expect("a directory for the script");
    let path = script_dir.path().join("main");
    std::fs::write(&path, code).expect("the script");
    let name = format!("airlock-control-{}", uuid::Uuid::now_v7().simple());
    // The client forwards SIGTERM and waits; SIGKILL ends it a second later.
    let output = Command::new("timeout")
        .args(["-k", "1"])
        .arg(format!("{}", wall_ms as f64 / 1000.0))
        .args([
            "docker",
            "run",
            "--rm",
            "--name",
            &name,
            "--network",
            "none",
            "--cap-drop",
            "ALL",
        ])
        .args([
            "--security-opt",
            "no-new-privileges",
            "--read-only",
            "--user",
            "1000:1000",
        ])
        .args([
            "--tmpfs",
            "/tmp:rw,size=16m,mode=1777",
            "--workdir",
            "/tmp",
            "--runtime=runc",
        ])
        .args(["-e", "HOME=/tmp", "-v"])
        .arg(format!("{}:/opt/main:ro", path.display()))
        .args([airlock_executor::DEFAULT_IMAGE, interpreter, "/opt/main"])
        .stdin(Stdio::null())
        .output()
        .expect("the docker CLI");
    // `timeout` stops the client, not the container (its PID 1 ignores SIGTERM).
    let _ = Command::new("docker").args(["rm", "-f", &name]).output();
    (
        // Without a code the client was killed by `timeout`, at the wall time.
        Some(output.status.code().map_or(TIMED_OUT, i64::from)),
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    )
}
