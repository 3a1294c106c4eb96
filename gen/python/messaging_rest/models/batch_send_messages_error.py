from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.batch_send_messages_error_details_type_0 import (
        BatchSendMessagesErrorDetailsType0,
    )


T = TypeVar("T", bound="BatchSendMessagesError")


@_attrs_define
class BatchSendMessagesError:
    """The error of a refused item: the error body a single SendMessage would have
    answered, without the request id (the batch's Request-Id header names it).

        Attributes:
            code (str): Machine-readable error code of the error table, for example
                "invalid_argument", "recipient_opted_out" or "insufficient_credits".
            message (str): What went wrong, for people.
            details (BatchSendMessagesErrorDetailsType0 | None): Facts about the error, as in a single send's error body:
                strings by
                name; invalid_argument also has field, rule and field_violations (a list
                of {field, description}).
    """

    code: str
    message: str
    details: BatchSendMessagesErrorDetailsType0 | None
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.batch_send_messages_error_details_type_0 import (
            BatchSendMessagesErrorDetailsType0,
        )

        code = self.code

        message = self.message

        details: dict[str, Any] | None
        if isinstance(self.details, BatchSendMessagesErrorDetailsType0):
            details = self.details.to_dict()
        else:
            details = self.details

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "code": code,
                "message": message,
                "details": details,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.batch_send_messages_error_details_type_0 import (
            BatchSendMessagesErrorDetailsType0,
        )

        d = dict(src_dict)
        code = d.pop("code")

        message = d.pop("message")

        def _parse_details(data: object) -> BatchSendMessagesErrorDetailsType0 | None:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                details_type_0 = BatchSendMessagesErrorDetailsType0.from_dict(data)

                return details_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(BatchSendMessagesErrorDetailsType0 | None, data)

        details = _parse_details(d.pop("details"))

        batch_send_messages_error = cls(
            code=code,
            message=message,
            details=details,
        )

        batch_send_messages_error.additional_properties = d
        return batch_send_messages_error

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
