"""Greetings and a small formula, with the characters people really write."""

GREETINGS = {
    "fa": "سلام، می‌خواهم کمک کنم",
    "ru": "Привет, мир",
    "emoji": "👨‍👩‍👧 ❤️ 1️⃣",
}

Δt = 0.01
σ = 2.5


def decay(x, café=1.0):
    return x * (1 - Δt / σ) * café


for lang, text in GREETINGS.items():
    print(lang, text, decay(1.0))
