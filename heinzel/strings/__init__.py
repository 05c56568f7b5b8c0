"""The strings a surface shows or a lesson keeps: what is Unicode text (`text`), amounts in
USD as a person reads them (`usd`), what a lesson may keep of a secret (`scrub`), the
words of what waits on the user (`waits`). Base: they
import nothing of heinzel but its errors.
"""

__all__: list[str] = []
