from enum import StrEnum


class OptOutStatus(StrEnum):
    OPTED_IN = "opted_in"
    OPTED_OUT = "opted_out"

    def __str__(self) -> str:
        return str(self.value)
