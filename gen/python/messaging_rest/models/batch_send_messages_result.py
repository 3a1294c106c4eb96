from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.batch_send_messages_error import BatchSendMessagesError
    from ..models.message import Message


T = TypeVar("T", bound="BatchSendMessagesResult")


@_attrs_define
class BatchSendMessagesResult:
    """The outcome of one item of BatchSendMessages: a message or an error.

    Attributes:
        index (int): Position of the item in the request's messages, from 0.
        message (Message | None): The accepted message (status accepted, its credits spent); null when the
            item was refused.
        error (BatchSendMessagesError | None): Why the item was refused (nothing was spent for it); null when it was
            accepted.
    """

    index: int
    message: Message | None
    error: BatchSendMessagesError | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.batch_send_messages_error import BatchSendMessagesError
        from ..models.message import Message

        index = self.index

        message: dict[str, Any] | None
        if isinstance(self.message, Message):
            message = self.message.to_dict()
        else:
            message = self.message

        error: dict[str, Any] | None
        if isinstance(self.error, BatchSendMessagesError):
            error = self.error.to_dict()
        else:
            error = self.error

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "index": index,
                "message": message,
                "error": error,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.batch_send_messages_error import BatchSendMessagesError
        from ..models.message import Message

        d = dict(src_dict)
        index = d.pop("index")

        def _parse_message(data: object) -> Message | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                message_type_0 = Message.from_dict(data)

                return message_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(Message | None, data)

        message = _parse_message(d.pop("message"))

        def _parse_error(data: object) -> BatchSendMessagesError | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                error_type_0 = BatchSendMessagesError.from_dict(data)

                return error_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(BatchSendMessagesError | None, data)

        error = _parse_error(d.pop("error"))

        batch_send_messages_result = cls(
            index=index,
            message=message,
            error=error,
        )

        batch_send_messages_result.additional_properties = d
        return batch_send_messages_result

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> Any:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
