// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
//
// The event the BPF programs write into the ring buffer. src/event.rs mirrors this layout
// (`RawEvent`) and its test checks the size; change both together.

#ifndef AIRLOCK_OBSERVE_H
#define AIRLOCK_OBSERVE_H

#define OBSERVE_MAX_WATCHED 1024
// How many pid namespaces up from a task's own are searched for a watched one (a sandbox that
// creates a nested pid namespace stays observed).
#define OBSERVE_NAMESPACE_DEPTH 4
#define OBSERVE_RING_BYTES (16 * 1024 * 1024)

#define OBSERVE_PATH_BYTES 256
#define OBSERVE_EXTRA_BYTES 384
#define OBSERVE_SOCKADDR_BYTES 128
// argv: up to OBSERVE_ARGV_MAX arguments of up to OBSERVE_ARG_BYTES each, packed from offsets
// below OBSERVE_ARGV_AREA (a power of two, so the verifier can bound the offset by a mask).
#define OBSERVE_ARGV_MAX 8
#define OBSERVE_ARG_BYTES 128
#define OBSERVE_ARGV_AREA 256

enum observe_kind {
	OBSERVE_EXEC = 1,
	OBSERVE_EXIT = 2,
	OBSERVE_OPEN = 3,
	OBSERVE_UNLINK = 4,
	OBSERVE_RENAME = 5,
	OBSERVE_MKDIR = 6,
	OBSERVE_CHMOD = 7,
	OBSERVE_CHOWN = 8,
	OBSERVE_SOCKET = 9,
	OBSERVE_CONNECT = 10,
	OBSERVE_BIND = 11,
	OBSERVE_SEND = 12,
	OBSERVE_PTRACE = 13,
	OBSERVE_SETID = 14,
	OBSERVE_CAPSET = 15,
	OBSERVE_MOUNT = 16,
	OBSERVE_UMOUNT = 17,
	OBSERVE_MODULE = 18,
	OBSERVE_BPF = 19,
	OBSERVE_IO_URING = 20,
	OBSERVE_NAMESPACE = 21,
};

struct observe_event {
	__u64 time_ns;
	__s64 result;
	__u64 arg0;
	__u64 arg1;
	__u64 arg2;
	__u32 arg3;
	__u32 namespace;
	__u32 pid;
	__u32 tid;
	__u32 ppid;
	__u32 kind;
	__u32 syscall;
	__u32 extra_len;
	char comm[16];
	char path[OBSERVE_PATH_BYTES];
	char extra[OBSERVE_EXTRA_BYTES];
};

#endif
