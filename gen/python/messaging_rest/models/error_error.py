from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.error_error_details import ErrorErrorDetails


T = TypeVar("T", bound="ErrorError")


@_attrs_define
class ErrorError:
    """
    Attributes:
        code (str): Machine-readable error code; new codes may be added. Known codes (HTTP status): `invalid_key` (401),
            `key_revoked` (401), `key_expired` (401), `workspace_suspended` (403), `ip_not_allowed` (403),
            `insufficient_scope` (403), `rate_limited` (429), `invalid_argument` (400), `recipient_opted_out` (400),
            `payload_too_large` (413), `not_found` (404), `method_not_allowed` (405), `insufficient_credits` (402),
            `conflict` (409), `failed_precondition` (409), `unimplemented` (501), `unavailable` (503), `internal` (500).
        message (str): What went wrong, for people.
        details (ErrorErrorDetails): Facts about the error as strings, by code: insufficient_scope has required_scope
            and held_scopes (comma-separated); invalid_argument has field, rule and field_violations; recipient_opted_out
            has phone_number; insufficient_credits has price_credits; key refusals name api_key_id where the key was
            recognised.
        request_id (str): The Request-Id of the answer, for support and the request log.
    """

    code: str
    message: str
    details: ErrorErrorDetails
    request_id: str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        code = self.code

        message = self.message

        details = self.details.to_dict()

        request_id = self.request_id

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "code": code,
                "message": message,
                "details": details,
                "request_id": request_id,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.error_error_details import ErrorErrorDetails

        d = dict(src_dict)
        code = d.pop("code")

        message = d.pop("message")

        details = ErrorErrorDetails.from_dict(d.pop("details"))

        request_id = d.pop("request_id")

        error_error = cls(
            code=code,
            message=message,
            details=details,
            request_id=request_id,
        )

        error_error.additional_properties = d
        return error_error

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
