from enum import StrEnum


class OptOutSource(StrEnum):
    CONSOLE = "console"
    NETWORK_ERROR = "network_error"
    REPLY = "reply"

    def __str__(self) -> str:
        return str(self.value)
