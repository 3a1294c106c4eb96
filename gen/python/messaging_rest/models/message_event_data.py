from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.message_error import MessageError


T = TypeVar("T", bound="MessageEventData")


@_attrs_define
class MessageEventData:
    """Data of the message.* events (spec §Message event data).

    Attributes:
        message_id (str): Message identifier. Shape: msg_<uuid>. On message.received, the reply.
        to (str): Recipient number, digits only with country code. On message.received,
            the workspace's sender number that received the reply.
        status (str): Message status, for example "delivered" on message.delivered, "canceled"
            on message.canceled. On message.received: "received".
        wa_message_id (str): Identifier assigned by the messaging network; empty on a message.failed
            of a message the network refused before accepting it.
        occurred_at (datetime.datetime | None): When the status change happened on the network side.
        error (MessageError | None): Null unless message.failed: the network's error code and title (code 0
            and a reason such as "expired" when the service failed it itself).
        from_ (None | str): On message.received: the number that replied; null otherwise.
        text (None | str): On message.received: the text of the reply; null otherwise.
        reply_to_message_id (None | str): On message.received: the message replied to (msg_<uuid>), when it could be
            traced; null otherwise.
    """

    message_id: str
    to: str
    status: str
    wa_message_id: str
    occurred_at: datetime.datetime | None
    error: MessageError | None
    from_: None | str
    text: None | str
    reply_to_message_id: None | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.message_error import MessageError

        message_id = self.message_id

        to = self.to

        status = self.status

        wa_message_id = self.wa_message_id

        occurred_at: None | str
        if isinstance(self.occurred_at, datetime.datetime):
            occurred_at = self.occurred_at.isoformat()
        else:
            occurred_at = self.occurred_at

        error: dict[str, Any] | None
        if isinstance(self.error, MessageError):
            error = self.error.to_dict()
        else:
            error = self.error

        from_: None | str
        from_ = self.from_

        text: None | str
        text = self.text

        reply_to_message_id: None | str
        reply_to_message_id = self.reply_to_message_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "message_id": message_id,
                "to": to,
                "status": status,
                "wa_message_id": wa_message_id,
                "occurred_at": occurred_at,
                "error": error,
                "from": from_,
                "text": text,
                "reply_to_message_id": reply_to_message_id,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.message_error import MessageError

        d = dict(src_dict)
        message_id = d.pop("message_id")

        to = d.pop("to")

        status = d.pop("status")

        wa_message_id = d.pop("wa_message_id")

        def _parse_occurred_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                occurred_at_type_0 = datetime.datetime.fromisoformat(data)

                return occurred_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        occurred_at = _parse_occurred_at(d.pop("occurred_at"))

        def _parse_error(data: object) -> MessageError | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                error_type_0 = MessageError.from_dict(data)

                return error_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(MessageError | None, data)

        error = _parse_error(d.pop("error"))

        def _parse_from_(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        from_ = _parse_from_(d.pop("from"))

        def _parse_text(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        text = _parse_text(d.pop("text"))

        def _parse_reply_to_message_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        reply_to_message_id = _parse_reply_to_message_id(d.pop("reply_to_message_id"))

        message_event_data = cls(
            message_id=message_id,
            to=to,
            status=status,
            wa_message_id=wa_message_id,
            occurred_at=occurred_at,
            error=error,
            from_=from_,
            text=text,
            reply_to_message_id=reply_to_message_id,
        )

        message_event_data.additional_properties = d
        return message_event_data

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
