from enum import StrEnum


class MessageStatus(StrEnum):
    ACCEPTED = "accepted"
    CANCELED = "canceled"
    DELIVERED = "delivered"
    FAILED = "failed"
    READ = "read"
    SCHEDULED = "scheduled"
    SENT = "sent"

    def __str__(self) -> str:
        return str(self.value)
