// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
//
// Airlock's kernel observation: syscall tracepoints that record what the processes of watched
// sandboxes do. Only tasks whose pid namespace (or an ancestor of it) is in `watched` produce
// events, so every other process on the host pays one namespace read and one map lookup.
//
// A syscall is recorded in two steps: its enter tracepoint copies the arguments (paths, argv,
// socket addresses are read while the caller's memory still holds them) into `pending`, keyed by
// thread; its exit tracepoint adds the result and moves the event into the `events` ring buffer.
// When the ring buffer is full the event is counted in the watched namespace's `watched` value
// (events lost), never silently dropped.
//
// The kernel structures are declared here, reduced to the fields read, with
// preserve_access_index: libbpf-style CO-RE relocations, resolved by the loader against the
// running kernel's BTF, so no vmlinux.h is generated at build time.

#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "observe.h"

char LICENSE[] SEC("license") = "GPL";

struct ns_common {
	unsigned int inum;
} __attribute__((preserve_access_index));

struct pid_namespace {
	unsigned int level;
	struct pid_namespace *parent;
	struct ns_common ns;
} __attribute__((preserve_access_index));

struct upid {
	int nr;
	struct pid_namespace *ns;
};

struct pid {
	unsigned int level;
	struct upid numbers[1];
} __attribute__((preserve_access_index));

struct task_struct {
	int pid;
	int tgid;
	int exit_code;
	struct task_struct *real_parent;
	struct pid *thread_pid;
} __attribute__((preserve_access_index));

struct sys_enter_ctx {
	__u64 common;
	int nr;
	int pad;
	__u64 args[6];
};

struct sys_exit_ctx {
	__u64 common;
	int nr;
	int pad;
	long ret;
};

struct msghdr_user {
	__u64 name;
	int namelen;
};

// Watched pid namespace inode -> events lost for it.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, OBSERVE_MAX_WATCHED);
	__type(key, __u32);
	__type(value, __u64);
} watched SEC(".maps");

// Thread (pid_tgid) -> the event begun at syscall entry. LRU, so a thread that dies inside a
// syscall (or an exec from a non-leader thread) cannot leave entries behind for good.
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct observe_event);
} pending SEC(".maps");

// Where an event is built (too big for the 512-byte BPF stack).
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct observe_event);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, OBSERVE_RING_BYTES);
} events SEC(".maps");

// The watched namespace the current task belongs to (its own pid namespace or an ancestor), or 0.
static __always_inline __u32 watched_namespace(struct task_struct *task)
{
	struct pid *pid = BPF_CORE_READ(task, thread_pid);
	if (!pid)
		return 0;
	unsigned int level = BPF_CORE_READ(pid, level);
	struct upid upid = {};
	// numbers[level]: the task's pid in its own (innermost) namespace.
	unsigned long base = (unsigned long)pid + bpf_core_field_offset(struct pid, numbers);
	bpf_probe_read_kernel(&upid, sizeof(upid), (void *)(base + (level & 31) * sizeof(struct upid)));
	struct pid_namespace *ns = upid.ns;
	for (int i = 0; i < OBSERVE_NAMESPACE_DEPTH; i++) {
		if (!ns)
			return 0;
		__u32 inum = BPF_CORE_READ(ns, ns.inum);
		if (bpf_map_lookup_elem(&watched, &inum))
			return inum;
		ns = BPF_CORE_READ(ns, parent);
	}
	return 0;
}

static __always_inline void count_lost(__u32 namespace)
{
	__u64 *lost = bpf_map_lookup_elem(&watched, &namespace);
	if (lost)
		__sync_fetch_and_add(lost, 1);
}

// A zeroed event in the scratch slot with who and when filled in, or NULL when the current task
// is not watched.
static __always_inline struct observe_event *begin(__u32 kind)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u32 namespace = watched_namespace(task);
	if (!namespace)
		return NULL;
	__u32 zero = 0;
	struct observe_event *e = bpf_map_lookup_elem(&scratch, &zero);
	if (!e)
		return NULL;
	__builtin_memset(e, 0, sizeof(*e));
	__u64 id = bpf_get_current_pid_tgid();
	e->time_ns = bpf_ktime_get_ns();
	e->namespace = namespace;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->ppid = BPF_CORE_READ(task, real_parent, tgid);
	e->kind = kind;
	bpf_get_current_comm(e->comm, sizeof(e->comm));
	return e;
}

static __always_inline void hold(struct observe_event *e)
{
	__u64 id = bpf_get_current_pid_tgid();
	bpf_map_update_elem(&pending, &id, e, BPF_ANY);
}

static __always_inline void emit(struct observe_event *e)
{
	struct observe_event *out = bpf_ringbuf_reserve(&events, sizeof(*out), 0);
	if (!out) {
		count_lost(e->namespace);
		return;
	}
	bpf_probe_read_kernel(out, sizeof(*out), e);
	bpf_ringbuf_submit(out, 0);
}

static __always_inline int finish(struct sys_exit_ctx *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct observe_event *e = bpf_map_lookup_elem(&pending, &id);
	if (!e)
		return 0;
	e->result = ctx->ret;
	emit(e);
	bpf_map_delete_elem(&pending, &id);
	return 0;
}

static __always_inline void read_path(char *dst, __u64 user_ptr)
{
	bpf_probe_read_user_str(dst, OBSERVE_PATH_BYTES, (const void *)user_ptr);
}

static __always_inline void read_sockaddr(struct observe_event *e, __u64 user_ptr, __u64 len)
{
	if (!user_ptr || !len)
		return;
	// At most 127 bytes (a sockaddr_un is 110), bounded by a mask the verifier can follow.
	__u32 n = len > OBSERVE_SOCKADDR_BYTES - 1 ? OBSERVE_SOCKADDR_BYTES - 1 : len;
	// Through a register clang cannot see into: it would drop the mask as redundant.
	asm volatile("%0 &= 127" : "+r"(n));
	if (!bpf_probe_read_user(e->extra, n, (const void *)user_ptr))
		e->extra_len = n;
}

// The head of argv, NUL-separated, in `extra`; `arg3` says how many were read and whether more
// were left (bit 31).
static __always_inline void read_argv(struct observe_event *e, __u64 argv)
{
	__u32 offset = 0;
	__u32 count = 0;
	if (!argv)
		return;
	for (int i = 0; i < OBSERVE_ARGV_MAX; i++) {
		__u64 arg = 0;
		if (bpf_probe_read_user(&arg, sizeof(arg), (const void *)(argv + i * sizeof(__u64))) || !arg)
			goto done;
		if (offset >= OBSERVE_ARGV_AREA) {
			e->arg3 = count | (1u << 31);
			e->extra_len = offset;
			return;
		}
		long n = bpf_probe_read_user_str(&e->extra[offset & (OBSERVE_ARGV_AREA - 1)], OBSERVE_ARG_BYTES,
						 (const void *)arg);
		if (n <= 0)
			goto done;
		offset += n;
		count++;
	}
	// Every slot read: more arguments may follow.
	{
		__u64 arg = 0;
		bpf_probe_read_user(&arg, sizeof(arg), (const void *)(argv + OBSERVE_ARGV_MAX * sizeof(__u64)));
		if (arg)
			count |= 1u << 31;
	}
done:
	e->arg3 = count;
	e->extra_len = offset > OBSERVE_EXTRA_BYTES ? OBSERVE_EXTRA_BYTES : offset;
}

#define ENTER(name, KIND) \
	SEC("tracepoint/syscalls/sys_enter_" #name) int sys_enter_##name(struct sys_enter_ctx *ctx) \
	{ \
		struct observe_event *e = begin(KIND); \
		if (!e) \
			return 0; \
		capture_##name(e, ctx->args); \
		hold(e); \
		return 0; \
	} \
	SEC("tracepoint/syscalls/sys_exit_" #name) int sys_exit_##name(struct sys_exit_ctx *ctx) \
	{ \
		return finish(ctx); \
	}

#define CAPTURE(name) static __always_inline void capture_##name(struct observe_event *e, __u64 *a)

// Processes.
CAPTURE(execve) { read_path(e->path, a[0]); read_argv(e, a[1]); }
CAPTURE(execveat) { e->arg0 = a[0]; e->arg1 = a[4]; read_path(e->path, a[1]); read_argv(e, a[2]); }
ENTER(execve, OBSERVE_EXEC)
ENTER(execveat, OBSERVE_EXEC)

// Files: arg0 = directory fd (or AT_FDCWD), arg1 = flags, arg2 = mode.
CAPTURE(open) { e->arg0 = (__u64)-100; e->arg1 = a[1]; e->arg2 = a[2]; read_path(e->path, a[0]); }
CAPTURE(creat) { e->arg0 = (__u64)-100; e->arg1 = 01 | 0100 | 01000; e->arg2 = a[1]; read_path(e->path, a[0]); }
CAPTURE(openat) { e->arg0 = a[0]; e->arg1 = a[2]; e->arg2 = a[3]; read_path(e->path, a[1]); }
CAPTURE(openat2)
{
	e->arg0 = a[0];
	// struct open_how starts with its u64 flags, then u64 mode.
	bpf_probe_read_user(&e->arg1, sizeof(__u64), (const void *)a[2]);
	bpf_probe_read_user(&e->arg2, sizeof(__u64), (const void *)(a[2] + 8));
	read_path(e->path, a[1]);
}
ENTER(open, OBSERVE_OPEN)
ENTER(creat, OBSERVE_OPEN)
ENTER(openat, OBSERVE_OPEN)
ENTER(openat2, OBSERVE_OPEN)

CAPTURE(unlink) { e->arg0 = (__u64)-100; read_path(e->path, a[0]); }
CAPTURE(rmdir) { e->arg0 = (__u64)-100; e->arg1 = 0x200; read_path(e->path, a[0]); }
CAPTURE(unlinkat) { e->arg0 = a[0]; e->arg1 = a[2]; read_path(e->path, a[1]); }
ENTER(unlink, OBSERVE_UNLINK)
ENTER(rmdir, OBSERVE_UNLINK)
ENTER(unlinkat, OBSERVE_UNLINK)

CAPTURE(rename) { e->arg0 = (__u64)-100; read_path(e->path, a[0]); read_path(e->extra, a[1]); }
CAPTURE(renameat) { e->arg0 = a[0]; read_path(e->path, a[1]); read_path(e->extra, a[3]); }
CAPTURE(renameat2) { e->arg0 = a[0]; e->arg1 = a[4]; read_path(e->path, a[1]); read_path(e->extra, a[3]); }
ENTER(rename, OBSERVE_RENAME)
ENTER(renameat, OBSERVE_RENAME)
ENTER(renameat2, OBSERVE_RENAME)

CAPTURE(mkdir) { e->arg0 = (__u64)-100; e->arg2 = a[1]; read_path(e->path, a[0]); }
CAPTURE(mkdirat) { e->arg0 = a[0]; e->arg2 = a[2]; read_path(e->path, a[1]); }
ENTER(mkdir, OBSERVE_MKDIR)
ENTER(mkdirat, OBSERVE_MKDIR)

CAPTURE(chmod) { e->arg0 = (__u64)-100; e->arg2 = a[1]; read_path(e->path, a[0]); }
CAPTURE(fchmodat) { e->arg0 = a[0]; e->arg2 = a[2]; read_path(e->path, a[1]); }
CAPTURE(fchmod) { e->arg0 = a[0]; e->arg2 = a[1]; }
ENTER(chmod, OBSERVE_CHMOD)
ENTER(fchmodat, OBSERVE_CHMOD)
ENTER(fchmod, OBSERVE_CHMOD)

// arg1 = uid, arg2 = gid.
CAPTURE(chown) { e->arg0 = (__u64)-100; e->arg1 = a[1]; e->arg2 = a[2]; read_path(e->path, a[0]); }
CAPTURE(lchown) { e->arg0 = (__u64)-100; e->arg1 = a[1]; e->arg2 = a[2]; read_path(e->path, a[0]); }
CAPTURE(fchownat) { e->arg0 = a[0]; e->arg1 = a[2]; e->arg2 = a[3]; read_path(e->path, a[1]); }
CAPTURE(fchown) { e->arg0 = a[0]; e->arg1 = a[1]; e->arg2 = a[2]; }
ENTER(chown, OBSERVE_CHOWN)
ENTER(lchown, OBSERVE_CHOWN)
ENTER(fchownat, OBSERVE_CHOWN)
ENTER(fchown, OBSERVE_CHOWN)

// Network: arg0 = fd (socket: family), arg1 = type / length, arg2 = protocol / flags.
CAPTURE(socket) { e->arg0 = a[0]; e->arg1 = a[1]; e->arg2 = a[2]; }
CAPTURE(connect) { e->arg0 = a[0]; read_sockaddr(e, a[1], a[2]); }
CAPTURE(bind) { e->arg0 = a[0]; read_sockaddr(e, a[1], a[2]); }
CAPTURE(sendto) { e->arg0 = a[0]; e->arg1 = a[2]; e->arg2 = a[3]; read_sockaddr(e, a[4], a[5]); }
CAPTURE(sendmsg)
{
	struct msghdr_user msg = {};
	e->arg0 = a[0];
	e->arg2 = a[2];
	if (!bpf_probe_read_user(&msg, sizeof(msg), (const void *)a[1]))
		read_sockaddr(e, msg.name, msg.namelen > 0 ? msg.namelen : 0);
}
CAPTURE(sendmmsg)
{
	// The first message's destination (struct mmsghdr starts with its msghdr).
	struct msghdr_user msg = {};
	e->arg0 = a[0];
	e->arg1 = a[2];
	if (!bpf_probe_read_user(&msg, sizeof(msg), (const void *)a[1]))
		read_sockaddr(e, msg.name, msg.namelen > 0 ? msg.namelen : 0);
}
ENTER(socket, OBSERVE_SOCKET)
ENTER(connect, OBSERVE_CONNECT)
ENTER(bind, OBSERVE_BIND)
ENTER(sendto, OBSERVE_SEND)
ENTER(sendmsg, OBSERVE_SEND)
ENTER(sendmmsg, OBSERVE_SEND)

// Privileged or dangerous: the first arguments as numbers. Only as many as the syscall has: the
// kernel refuses to attach a program that reads past the end of the tracepoint's record.
#define NUMBERS1(name) CAPTURE(name) { e->arg0 = a[0]; }
#define NUMBERS2(name) CAPTURE(name) { e->arg0 = a[0]; e->arg1 = a[1]; }
#define NUMBERS3(name) CAPTURE(name) { e->arg0 = a[0]; e->arg1 = a[1]; e->arg2 = a[2]; }
NUMBERS3(ptrace)
NUMBERS1(setuid)
NUMBERS1(setgid)
NUMBERS2(setreuid)
NUMBERS2(setregid)
NUMBERS3(setresuid)
NUMBERS3(setresgid)
NUMBERS2(capset)
NUMBERS3(init_module)
NUMBERS3(finit_module)
NUMBERS3(bpf)
NUMBERS2(io_uring_setup)
NUMBERS1(unshare)
NUMBERS2(setns)
ENTER(ptrace, OBSERVE_PTRACE)
ENTER(setuid, OBSERVE_SETID)
ENTER(setgid, OBSERVE_SETID)
ENTER(setreuid, OBSERVE_SETID)
ENTER(setregid, OBSERVE_SETID)
ENTER(setresuid, OBSERVE_SETID)
ENTER(setresgid, OBSERVE_SETID)
ENTER(capset, OBSERVE_CAPSET)
ENTER(init_module, OBSERVE_MODULE)
ENTER(finit_module, OBSERVE_MODULE)
ENTER(bpf, OBSERVE_BPF)
ENTER(io_uring_setup, OBSERVE_IO_URING)
ENTER(unshare, OBSERVE_NAMESPACE)
ENTER(setns, OBSERVE_NAMESPACE)

// mount: path = source, extra = target, arg1 = flags.
CAPTURE(mount) { e->arg1 = a[3]; read_path(e->path, a[0]); read_path(e->extra, a[1]); }
CAPTURE(umount) { e->arg1 = a[1]; read_path(e->extra, a[0]); }
ENTER(mount, OBSERVE_MOUNT)
ENTER(umount, OBSERVE_UMOUNT)

// A process (thread group) ends: its exit code in `result`.
SEC("tracepoint/sched/sched_process_exit") int sched_process_exit(void *ctx)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	__u64 id = bpf_get_current_pid_tgid();
	if ((__u32)id != (__u32)(id >> 32))
		return 0;
	struct observe_event *e = begin(OBSERVE_EXIT);
	if (!e)
		return 0;
	e->result = BPF_CORE_READ(task, exit_code);
	emit(e);
	return 0;
}
