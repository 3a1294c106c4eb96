from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.sender_status import SenderStatus

T = TypeVar("T", bound="Sender")


@_attrs_define
class Sender:
    """A phone number of the workspace from which messages are sent.

    Attributes:
        id (str): Sender identifier. Shape: snd_<uuid>.
        object_ (str): Always "sender".
        phone_number (str): The number, digits only with country code, for example "4915112345678".
        name (str): Name given in the console.
        status (None | SenderStatus): Whether messages may be sent from this number.
        created_at (datetime.datetime | None): Creation time.
    """

    id: str
    object_: str
    phone_number: str
    name: str
    status: None | SenderStatus
    created_at: datetime.datetime | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        id = self.id

        object_ = self.object_

        phone_number = self.phone_number

        name = self.name

        status: None | str
        if isinstance(self.status, SenderStatus):
            status = self.status.value
        else:
            status = self.status

        created_at: None | str
        if isinstance(self.created_at, datetime.datetime):
            created_at = self.created_at.isoformat()
        else:
            created_at = self.created_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "object": object_,
                "phone_number": phone_number,
                "name": name,
                "status": status,
                "created_at": created_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        id = d.pop("id")

        object_ = d.pop("object")

        phone_number = d.pop("phone_number")

        name = d.pop("name")

        def _parse_status(data: object) -> None | SenderStatus:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                status_type_0 = SenderStatus(data)

                return status_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SenderStatus, data)

        status = _parse_status(d.pop("status"))

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

        sender = cls(
            id=id,
            object_=object_,
            phone_number=phone_number,
            name=name,
            status=status,
            created_at=created_at,
        )

        sender.additional_properties = d
        return sender

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
