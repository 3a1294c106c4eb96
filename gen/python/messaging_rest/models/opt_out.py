from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.opt_out_source import OptOutSource
from ..models.opt_out_status import OptOutStatus

T = TypeVar("T", bound="OptOut")


@_attrs_define
class OptOut:
    """A number of the workspace's opt-out list, and its last change.

    Attributes:
        phone_number (str): The number, digits only with country code.
        object_ (str): Always "opt_out".
        status (None | OptOutStatus): "opted_out" while the number is on the list (sends to it are refused);
            "opted_in" once it was taken off again.
        source (None | OptOutSource): What made the last change: "reply" (a keyword the number wrote),
            "network_error" (WhatsApp's 131050 on a marketing template) or "console".
        keyword (None | str): The keyword of a reply, as written (trimmed); null for other sources.
        error_code (int | None): The network's error code of a network_error (131050); null otherwise.
        message_id (None | str): The reply (inbound msg_<uuid>) or the failed message that made the last
            change; null for the console.
        created_at (datetime.datetime | None): When the number was first put on the list.
        updated_at (datetime.datetime | None): When the last change was made.
    """

    phone_number: str
    object_: str
    status: None | OptOutStatus
    source: None | OptOutSource
    keyword: None | str
    error_code: int | None
    message_id: None | str
    created_at: datetime.datetime | None
    updated_at: datetime.datetime | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        phone_number = self.phone_number

        object_ = self.object_

        status: None | str
        if isinstance(self.status, OptOutStatus):
            status = self.status.value
        else:
            status = self.status

        source: None | str
        if isinstance(self.source, OptOutSource):
            source = self.source.value
        else:
            source = self.source

        keyword: None | str
        keyword = self.keyword

        error_code: int | None
        error_code = self.error_code

        message_id: None | str
        message_id = self.message_id

        created_at: None | str
        if isinstance(self.created_at, datetime.datetime):
            created_at = self.created_at.isoformat()
        else:
            created_at = self.created_at

        updated_at: None | str
        if isinstance(self.updated_at, datetime.datetime):
            updated_at = self.updated_at.isoformat()
        else:
            updated_at = self.updated_at

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "phone_number": phone_number,
                "object": object_,
                "status": status,
                "source": source,
                "keyword": keyword,
                "error_code": error_code,
                "message_id": message_id,
                "created_at": created_at,
                "updated_at": updated_at,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        phone_number = d.pop("phone_number")

        object_ = d.pop("object")

        def _parse_status(data: object) -> None | OptOutStatus:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                status_type_0 = OptOutStatus(data)

                return status_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | OptOutStatus, data)

        status = _parse_status(d.pop("status"))

        def _parse_source(data: object) -> None | OptOutSource:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                source_type_0 = OptOutSource(data)

                return source_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | OptOutSource, data)

        source = _parse_source(d.pop("source"))

        def _parse_keyword(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        keyword = _parse_keyword(d.pop("keyword"))

        def _parse_error_code(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        error_code = _parse_error_code(d.pop("error_code"))

        def _parse_message_id(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        message_id = _parse_message_id(d.pop("message_id"))

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

        def _parse_updated_at(data: object) -> datetime.datetime | None:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                updated_at_type_0 = datetime.datetime.fromisoformat(data)

                return updated_at_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(datetime.datetime | None, data)

        updated_at = _parse_updated_at(d.pop("updated_at"))

        opt_out = cls(
            phone_number=phone_number,
            object_=object_,
            status=status,
            source=source,
            keyword=keyword,
            error_code=error_code,
            message_id=message_id,
            created_at=created_at,
            updated_at=updated_at,
        )

        opt_out.additional_properties = d
        return opt_out

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
