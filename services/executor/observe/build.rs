//! Compiles the BPF programs (bpf/observe.bpf.c) with clang for the `bpf` target; the object is
//! embedded in the library and relocated against the running kernel's BTF when loaded (CO-RE).
//! Needs clang and libbpf's BPF-side headers (Debian: clang, libbpf-dev; `ops/install-deps`).

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let source = PathBuf::from("bpf/observe.bpf.c");
    println!("cargo:rerun-if-changed=bpf/observe.bpf.c");
    println!("cargo:rerun-if-changed=bpf/observe.h");
    println!("cargo:rerun-if-env-changed=CLANG");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR")).join("observe.bpf.o");
    let clang = std::env::var("CLANG").unwrap_or_else(|_| "clang".to_string());
    let multiarch = format!("/usr/include/{}-linux-gnu", std::env::consts::ARCH);
    let status = Command::new(&clang)
        .args(["-O2", "-g", "-Wall", "-Werror", "-target", "bpf"])
        .arg(format!("-I{multiarch}"))
        .arg("-c")
        .arg(&source)
        .arg("-o")
        .arg(&out)
        .status();
    match status {
        Ok(status) if status.success() => {}
        Ok(status) => panic!("{clang} failed to compile {} ({status})", source.display()),
        Err(error) => panic!(
            "cannot run {clang} to compile the BPF programs ({error}): install clang and libbpf-dev (ops/install-deps)"
        ),
    }
}
