from enum import StrEnum


class QueuedReason(StrEnum):
    DAILY_LIMIT = "daily_limit"
    RECIPIENT_PAIR_RATE = "recipient_pair_rate"
    SENDER_RATE = "sender_rate"

    def __str__(self) -> str:
        return str(self.value)
