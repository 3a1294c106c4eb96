from enum import StrEnum


class MessageStatus(StrEnum):
    ACCEPTED = "accepted"
    DELIVERED = "delivered"
    FAILED = "failed"
    READ = "read"
    SENT = "sent"

    def __str__(self) -> str:
        return str(self.value)
