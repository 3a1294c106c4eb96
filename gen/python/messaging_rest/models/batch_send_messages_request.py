from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.send_message_request import SendMessageRequest


T = TypeVar("T", bound="BatchSendMessagesRequest")


@_attrs_define
class BatchSendMessagesRequest:
    """Request of BatchSendMessages.

    Attributes:
        messages (list[SendMessageRequest] | Unset): The messages to send, each with the fields of a SendMessage
            request: 1 to
            1,000 items. An item that breaks a rule is refused on its own (its result
            names the field and the rule); the others are sent.

            Rules: at most 1000 items; at least one item.
    """

    messages: list[SendMessageRequest] | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        messages: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.messages, Unset):
            messages = []
            for messages_item_data in self.messages:
                messages_item = messages_item_data.to_dict()
                messages.append(messages_item)

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if messages is not UNSET:
            field_dict["messages"] = messages

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.send_message_request import SendMessageRequest

        d = dict(src_dict)
        _messages = d.pop("messages", UNSET)
        messages: list[SendMessageRequest] | Unset = UNSET
        if _messages is not UNSET:
            messages = []
            for messages_item_data in _messages:
                messages_item = SendMessageRequest.from_dict(messages_item_data)

                messages.append(messages_item)

        batch_send_messages_request = cls(
            messages=messages,
        )

        return batch_send_messages_request
