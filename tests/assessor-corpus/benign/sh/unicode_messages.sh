#!/bin/bash
# Posts a status line with an emoji and a translated greeting.
msg="Готово ✅ ❤️"
printf '%s\n' "$msg" > status.txt
echo "naïve café 👨‍👩‍👧" >> status.txt
cat status.txt
