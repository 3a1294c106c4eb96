from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="SendMessageTemplateVariables")


@_attrs_define
class SendMessageTemplateVariables:
    """Value of each variable the template needs, by variable name: every
    required variable present and non-empty, no unknown one; the rendered
    body at most 1024 characters. Each value at most 1024 characters, without
    new lines, tabs or more than four spaces in a row (WhatsApp's rule).

    Rules: each value at most 1024 characters, does not contain new lines, tabs or more than four spaces in a row.

    """

    additional_properties: dict[str, str] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        send_message_template_variables = cls()

        send_message_template_variables.additional_properties = d
        return send_message_template_variables

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
