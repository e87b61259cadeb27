from pathlib import Path
from PIL import Image

src = Path("images")
dst = Path("thumbs")
dst.mkdir(exist_ok=True)
for path in src.glob("*.jpg"):
    with Image.open(path) as im:
        im.thumbnail((256, 256))
        im.save(dst / path.name, quality=85)
