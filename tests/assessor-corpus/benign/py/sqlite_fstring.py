import sqlite3

def rows_for(table, min_qty):
    conn = sqlite3.connect("inventory.db")
    query = f"SELECT * FROM {table} WHERE qty > {min_qty}"
    return conn.execute(query).fetchall()

print(rows_for("items", 2))
