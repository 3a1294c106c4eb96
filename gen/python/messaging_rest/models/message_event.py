from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.message_event_data import MessageEventData


T = TypeVar("T", bound="MessageEvent")


@_attrs_define
class MessageEvent:
    """Webhook event envelope of the message.* events (spec §Webhook event
    envelope, §Events), POSTed to the customer's endpoint as JSON.

        Attributes:
            id (str): Event identifier. Shape: UUID. Equals the Service-Delivery header; stable
                across retries of the same event.
            type_ (str): Event type: "message.sent", "message.delivered", "message.read",
                "message.failed", "message.canceled" or "message.received".
            created_at (datetime.datetime | None): Creation time of the event.
            data (MessageEventData | None): What happened to the message.
    """

    id: str
    type_: str
    created_at: datetime.datetime | None
    data: MessageEventData | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.message_event_data import MessageEventData

        id = self.id

        type_ = self.type_

        created_at: None | str
        if isinstance(self.created_at, datetime.datetime):
            created_at = self.created_at.isoformat()
        else:
            created_at = self.created_at

        data: dict[str, Any] | None
        if isinstance(self.data, MessageEventData):
            data = self.data.to_dict()
        else:
            data = self.data

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "type": type_,
                "created_at": created_at,
                "data": data,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.message_event_data import MessageEventData

        d = dict(src_dict)
        id = d.pop("id")

        type_ = d.pop("type")

        def _parse_created_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                created_at_type_0 = datetime.datetime.fromisoformat(data)

                return created_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        created_at = _parse_created_at(d.pop("created_at"))

        def _parse_data(data: object) -> MessageEventData | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                data_type_0 = MessageEventData.from_dict(data)

                return data_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(MessageEventData | None, data)

        data = _parse_data(d.pop("data"))

        message_event = cls(
            id=id,
            type_=type_,
            created_at=created_at,
            data=data,
        )

        message_event.additional_properties = d
        return message_event

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
