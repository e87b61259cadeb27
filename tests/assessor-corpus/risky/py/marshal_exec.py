import marshal, zlib, base64
exec(marshal.loads(zlib.decompress(base64.b64decode(b"eJxLZmBgYGRgYGBgZGBmYGAAAAj0AK0="))))
