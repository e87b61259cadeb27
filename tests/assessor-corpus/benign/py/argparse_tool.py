import argparse
import sys

def main(argv=None):
    parser = argparse.ArgumentParser(description="Count words in files")
    parser.add_argument("files", nargs="+")
    parser.add_argument("--top", type=int, default=10)
    args = parser.parse_args(argv)
    counts = {}
    for name in args.files:
        with open(name, encoding="utf-8") as f:
            for word in f.read().split():
                counts[word.lower()] = counts.get(word.lower(), 0) + 1
    for word, n in sorted(counts.items(), key=lambda kv: -kv[1])[: args.top]:
        print(n, word)
    return 0

if __name__ == "__main__":
    sys.exit(main())
