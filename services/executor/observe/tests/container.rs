//! The observer against a real container: a bash program in the sandbox image (no network)
//! reads /etc/passwd, writes, deletes, runs `ls` and tries a TCP connect; the events of its pid
//! namespace must show each, and nothing of a process outside it. Needs root, the kernel's BTF
//! and a running Docker engine with the sandbox image (`airlock image build`); without them the
//! test fails, it does not skip.

use airlock_observe::{Action, Event, EventSink, Observer, PidNamespace, SocketAddress};
use std::process::Command;
use std::time::Duration;

const IMAGE: &str = "airlock-sandbox";

#[derive(Default)]
struct Collect(Vec<Event>);

impl EventSink for Collect {
    fn event(&mut self, event: Event) {
        self.0.push(event);
    }
}

fn docker(args: &[&str]) -> String {
    let output = Command::new("docker").args(args).output().expect("docker runs");
    assert!(
        output.status.success(),
        "docker {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// Removes the container however the test ends.
struct Container(String);

impl Drop for Container {
    fn drop(&mut self) {
        let _ = Command::new("docker").args(["rm", "-f", &self.0]).output();
    }
}

const PROGRAM: &str = r#"
while [ ! -e /tmp/go ]; do sleep 0.02; done
cat /etc/passwd > /dev/null
echo written > /tmp/observed-file
rm /tmp/observed-file
ls / > /dev/null
exec 3<>/dev/tcp/10.1.2.3/8080 || echo "connect failed"
"#;

#[test]
fn a_containers_exec_open_write_unlink_and_failed_connect_are_observed() {
    let observer = Observer::start().expect("kernel observation must load here (root, BTF)");
    let container = Container(docker(&[
        "run",
        "-d",
        "--network",
        "none",
        IMAGE,
        "bash",
        "-c",
        PROGRAM,
    ]));
    let pid: u32 = docker(&["inspect", "-f", "{{.State.Pid}}", &container.0])
        .parse()
        .expect("a pid");
    let namespace = PidNamespace::of_process(pid).expect("the container's pid namespace");
    let watch = observer.watch(namespace, Collect::default()).expect("watch");
    assert!(matches!(
        observer.watch(namespace, Collect::default()),
        Err(airlock_observe::ObserveError::AlreadyWatched { .. })
    ));
    // A process outside the namespace, doing the same, must not appear.
    std::fs::read_to_string("/etc/passwd").expect("host passwd");

    docker(&["exec", &container.0, "touch", "/tmp/go"]);
    let status = docker(&["wait", &container.0]);
    assert_eq!(status, "0", "the program ran to its end");
    std::thread::sleep(Duration::from_millis(50));
    let finished = watch.finish();
    let events = finished.sink.0;
    assert_eq!(finished.lost, 0, "no events lost");
    let me = std::process::id();
    assert!(
        events.iter().all(|e| e.pid != me && e.namespace == namespace.0),
        "only the container's processes"
    );

    let exec_of = |program: &str| {
        events
            .iter()
            .find(|e| matches!(&e.action, Action::Exec { path, .. } if path.ends_with(program)) && e.result == 0)
    };
    let cat = exec_of("/cat").unwrap_or_else(|| panic!("the exec of cat: {events:#?}"));
    let Action::Exec { argv, .. } = &cat.action else {
        unreachable!()
    };
    assert_eq!(argv, &["cat", "/etc/passwd"]);
    let ls = exec_of("/ls").expect("the exec of ls");
    let Action::Exec { argv, .. } = &ls.action else {
        unreachable!()
    };
    assert_eq!(argv, &["ls", "/"]);

    let opened = |wanted: &'static str, write: bool| {
        events.iter().filter(move |e| {
            matches!(&e.action, Action::Open { path, flags, .. }
                if path == wanted && ((flags & libc::O_ACCMODE as u64) != libc::O_RDONLY as u64) == write)
                && e.result >= 0
        })
    };
    // (runc's `docker exec` reads the container's /etc/passwd too: that is observed as well.)
    assert!(
        opened("/etc/passwd", false).any(|e| e.pid == cat.pid),
        "cat's read of /etc/passwd"
    );
    let written = opened("/tmp/observed-file", true)
        .next()
        .expect("the write of /tmp/observed-file");
    assert!(matches!(written.action, Action::Open { flags, .. } if flags & libc::O_CREAT as u64 != 0));
    assert!(
        events
            .iter()
            .any(|e| matches!(&e.action, Action::Unlink { path, .. } if path == "/tmp/observed-file") && e.result == 0),
        "the unlink"
    );
    let connect = events
        .iter()
        .find(|e| matches!(e.action, Action::Connect { .. }))
        .expect("the connect attempt");
    let Action::Connect {
        address: Some(SocketAddress::Ip { address, port }),
        ..
    } = &connect.action
    else {
        panic!("{connect:?}")
    };
    assert_eq!((address.to_string().as_str(), *port), ("10.1.2.3", 8080));
    assert_eq!(
        connect.errno(),
        Some(libc::ENETUNREACH),
        "no network: the connect fails"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e.action, Action::Socket { family, .. } if family as i32 == libc::AF_INET)),
        "the socket"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e.action, Action::Exit) && e.pid == cat.pid),
        "cat's exit"
    );
    // The pid tree: cat's parent is the shell, a process of the same namespace.
    assert!(
        events.iter().any(|e| e.pid == cat.ppid),
        "cat's parent is in the record"
    );
}

#[test]
fn namespaces_not_watched_cost_nothing_and_record_nothing() {
    let observer = Observer::start().expect("kernel observation must load here (root, BTF)");
    let container = Container(docker(&["run", "-d", "--network", "none", IMAGE, "sleep", "30"]));
    let pid: u32 = docker(&["inspect", "-f", "{{.State.Pid}}", &container.0])
        .parse()
        .expect("a pid");
    let watch = observer
        .watch(PidNamespace::of_process(pid).expect("namespace"), Collect::default())
        .expect("watch");
    // Activity in another container, not watched.
    docker(&["run", "--rm", "--network", "none", IMAGE, "cat", "/etc/passwd"]);
    let finished = watch.finish();
    assert!(
        finished.sink.0.is_empty(),
        "a sleeping watched container did nothing: {:#?}",
        finished.sink.0
    );
}
