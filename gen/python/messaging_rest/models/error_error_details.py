from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.field_violation import FieldViolation


T = TypeVar("T", bound="ErrorErrorDetails")


@_attrs_define
class ErrorErrorDetails:
    """Facts about the error as strings, by code: insufficient_scope has required_scope and held_scopes (comma-separated);
    invalid_argument has field, rule and field_violations; recipient_opted_out has phone_number; insufficient_credits
    has price_credits; key refusals name api_key_id where the key was recognised.

        Attributes:
            field_violations (list[FieldViolation] | Unset): invalid_argument: every broken rule of the request.
    """

    field_violations: list[FieldViolation] | Unset = UNSET
    additional_properties: dict[str, str] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        field_violations: list[dict[str, Any]] | Unset = UNSET
        if not isinstance(self.field_violations, Unset):
            field_violations = []
            for field_violations_item_data in self.field_violations:
                field_violations_item = field_violations_item_data.to_dict()
                field_violations.append(field_violations_item)

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update({})
        if field_violations is not UNSET:
            field_dict["field_violations"] = field_violations

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.field_violation import FieldViolation

        d = dict(src_dict)
        _field_violations = d.pop("field_violations", UNSET)
        field_violations: list[FieldViolation] | Unset = UNSET
        if _field_violations is not UNSET:
            field_violations = []
            for field_violations_item_data in _field_violations:
                field_violations_item = FieldViolation.from_dict(
                    field_violations_item_data
                )

                field_violations.append(field_violations_item)

        error_error_details = cls(
            field_violations=field_violations,
        )

        error_error_details.additional_properties = d
        return error_error_details

    @property
    def additional_keys(self) -> list[str]:
        return list(self.additional_properties.keys())

    def __getitem__(self, key: str) -> str:
        return self.additional_properties[key]

    def __setitem__(self, key: str, value: str) -> None:
        self.additional_properties[key] = value

    def __delitem__(self, key: str) -> None:
        del self.additional_properties[key]

    def __contains__(self, key: str) -> bool:
        return key in self.additional_properties
