# Ordinary computation Mai might write: stays LOW.
def primes(limit):
    sieve = [True] * (limit + 1)
    sieve[0:2] = [False, False]
    for n in range(2, int(limit ** 0.5) + 1):
        if sieve[n]:
            sieve[n * n :: n] = [False] * len(sieve[n * n :: n])
    return [n for n, is_prime in enumerate(sieve) if is_prime]

found = primes(100_000)
print(f"{len(found)} primes below 100000; the last is {found[-1]}")
