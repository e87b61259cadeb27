import re

text = open("contacts.txt", encoding="utf-8").read()
emails = sorted(set(re.findall(r"[\w.+-]+@[\w-]+\.[\w.]+", text)))
print("\n".join(emails))
