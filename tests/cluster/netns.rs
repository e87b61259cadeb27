//! Hosts for the cluster: one network namespace per NATS node, all on one Ethernet segment (a
//! bridge inside a namespace of its own, so that the machine's firewall, which Docker sets to
//! drop forwarded traffic, never sees it), and a link from this machine's namespace, where the
//! services, the test and S3 run. Everything is removed when dropped.
//!
//! A partition is made the way a broken link makes it: inside one node's namespace, packets to
//! and from the other nodes are dropped (iptables), while clients still reach it.

use std::process::{Command, Stdio};

pub struct Network {
    prefix: String,
    /// The /24 in use: `10.213.<subnet>.0`.
    subnet: u8,
    nodes: usize,
    partitioned: std::sync::Mutex<Vec<usize>>,
}

fn ip(args: &[&str]) {
    run("ip", args);
}

fn run(program: &str, args: &[&str]) {
    let output = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run {program} ({e}): the cluster test needs iproute2 and iptables, as root")
        });
    assert!(
        output.status.success(),
        "{program} {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A /24 under 10.213/16 that no interface of this machine uses yet.
fn free_subnet() -> u8 {
    let addresses = Command::new("ip")
        .args(["-o", "addr"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let start = (std::process::id() % 150) as u8;
    (0..150u8)
        .map(|i| 100 + (start + i) % 150)
        .find(|n| !addresses.contains(&format!("10.213.{n}.")))
        .expect("a free 10.213.x.0/24")
}

impl Network {
    /// Namespaces for `nodes` hosts, reachable from here at [`Network::address`].
    pub fn create(nodes: usize) -> Network {
        let prefix = format!("al{}", std::process::id() % 100_000);
        let network = Network {
            prefix,
            subnet: free_subnet(),
            nodes,
            partitioned: std::sync::Mutex::new(Vec::new()),
        };
        let switch = network.switch();
        ip(&["netns", "add", &switch]);
        ip(&["netns", "exec", &switch, "ip", "link", "add", "br0", "type", "bridge"]);
        ip(&["netns", "exec", &switch, "ip", "link", "set", "br0", "up"]);
        for i in 0..nodes {
            let ns = network.namespace(i);
            let (inside, outside) = (format!("{ns}a"), format!("{ns}b"));
            ip(&["netns", "add", &ns]);
            ip(&["link", "add", &inside, "type", "veth", "peer", "name", &outside]);
            ip(&["link", "set", &inside, "netns", &ns]);
            ip(&["link", "set", &outside, "netns", &switch]);
            ip(&[
                "netns", "exec", &switch, "ip", "link", "set", &outside, "master", "br0", "up",
            ]);
            let address = format!("{}/24", network.address(i));
            ip(&["netns", "exec", &ns, "ip", "addr", "add", &address, "dev", &inside]);
            ip(&["netns", "exec", &ns, "ip", "link", "set", &inside, "up"]);
            ip(&["netns", "exec", &ns, "ip", "link", "set", "lo", "up"]);
        }
        let (here, there) = (network.host_link(), format!("{}b", network.host_link()));
        ip(&["link", "add", &here, "type", "veth", "peer", "name", &there]);
        ip(&["link", "set", &there, "netns", &switch]);
        ip(&[
            "netns", "exec", &switch, "ip", "link", "set", &there, "master", "br0", "up",
        ]);
        ip(&["addr", "add", &format!("10.213.{}.1/24", network.subnet), "dev", &here]);
        ip(&["link", "set", &here, "up"]);
        network
    }

    fn switch(&self) -> String {
        format!("{}sw", self.prefix)
    }

    fn host_link(&self) -> String {
        format!("{}h", self.prefix)
    }

    /// The namespace of host `i`.
    pub fn namespace(&self, i: usize) -> String {
        format!("{}n{}", self.prefix, i + 1)
    }

    /// Host `i`'s address.
    pub fn address(&self, i: usize) -> String {
        format!("10.213.{}.{}", self.subnet, 11 + i)
    }

    /// A command run inside host `i`'s namespace (`ip netns exec` becomes the program itself,
    /// so the child's pid is the program's).
    pub fn command(&self, i: usize, program: &std::path::Path) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &self.namespace(i)]).arg(program);
        command
    }

    fn firewall(&self, i: usize, action: &str) {
        let ns = self.namespace(i);
        for other in (0..self.nodes).filter(|o| *o != i) {
            let peer = self.address(other);
            run(
                "ip",
                &[
                    "netns", "exec", &ns, "iptables", action, "INPUT", "-s", &peer, "-j", "DROP",
                ],
            );
            run(
                "ip",
                &[
                    "netns", "exec", &ns, "iptables", action, "OUTPUT", "-d", &peer, "-j", "DROP",
                ],
            );
        }
    }

    /// Cuts host `i` off the other hosts (it still reaches, and is reached from, this machine).
    pub fn partition(&self, i: usize) {
        self.firewall(i, "-A");
        self.partitioned.lock().unwrap_or_else(|p| p.into_inner()).push(i);
    }

    pub fn heal(&self, i: usize) {
        self.firewall(i, "-D");
        self.partitioned
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|p| *p != i);
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        // Deleting a namespace deletes its interfaces (and the peers of its veth pairs) and its
        // firewall rules.
        for i in 0..self.nodes {
            let _ = Command::new("ip").args(["netns", "del", &self.namespace(i)]).status();
        }
        let _ = Command::new("ip").args(["netns", "del", &self.switch()]).status();
        let _ = Command::new("ip")
            .args(["link", "del", &self.host_link()])
            .stderr(Stdio::null())
            .status();
    }
}
