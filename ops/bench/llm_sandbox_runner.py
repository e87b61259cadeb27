"""llm-sandbox as a contender in `airlock bench pipeline --llm-sandbox`.

A long-lived helper so that Python start-up and imports are paid once, not per run: for each
line on stdin ("fresh" or "reused") it runs the benchmark's trivial script through llm-sandbox's
Docker backend on the given image and answers one line, "ok" or "error <why>".

- fresh: a new SandboxSession per run (create, start, copy the code in, exec, remove), the path
  that gives each run its own container, as Airlock does;
- reused: one session kept open and reused for every run (no isolation between runs), the
  fastest path llm-sandbox offers.

Needs `pip install 'llm-sandbox[docker]'`.
"""

import sys

from llm_sandbox import SandboxSession

SCRIPT = "print('hello')\n"


def session(image):
    return SandboxSession(
        lang="python",
        image=image,
        keep_template=True,
        skip_environment_setup=True,
        verbose=False,
        # Airlock's image has no default command (it is built with `docker import`): keep the
        # container alive with `sleep`, under Docker's init so that the session's `stop` ends it
        # at once rather than after Docker's 10 s grace period. No network, as for the others.
        runtime_configs={"command": ["sleep", "infinity"], "init": True, "network_mode": "none"},
    )


def main():
    image = sys.argv[1]
    reused = None
    for line in sys.stdin:
        mode = line.strip()
        try:
            if mode == "fresh":
                with session(image) as fresh:
                    result = fresh.run(SCRIPT)
            elif mode == "reused":
                if reused is None:
                    reused = session(image)
                    reused.open()
                result = reused.run(SCRIPT)
            else:
                print(f"error unknown mode {mode!r}", flush=True)
                continue
            if result.exit_code == 0 and result.stdout == "hello\n":
                print("ok", flush=True)
            else:
                print(f"error exit {result.exit_code} stdout {result.stdout!r} stderr {result.stderr!r}", flush=True)
        except Exception as error:  # reported to the benchmark, which stops on it
            print(f"error {type(error).__name__}: {error}".replace("\n", " "), flush=True)
    if reused is not None:
        reused.close()


if __name__ == "__main__":
    main()
