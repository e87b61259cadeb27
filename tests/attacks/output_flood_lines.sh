# Output flood of short lines, on both streams.
yes "flood flood flood" &
yes "error error error" >&2
