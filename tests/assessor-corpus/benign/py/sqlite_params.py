import sqlite3

conn = sqlite3.connect("inventory.db")
cur = conn.cursor()
cur.execute("CREATE TABLE IF NOT EXISTS items (name TEXT, qty INTEGER)")
cur.executemany("INSERT INTO items VALUES (?, ?)", [("apple", 3), ("pear", 5)])
cur.execute("SELECT name, qty FROM items WHERE qty > ?", (2,))
print(cur.fetchall())
conn.commit()
