from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

from ..models.template_category import TemplateCategory
from ..models.template_status import TemplateStatus

if TYPE_CHECKING:
    from ..models.template_flow import TemplateFlow
    from ..models.template_variable import TemplateVariable


T = TypeVar("T", bound="Template")


@_attrs_define
class Template:
    """A message template: a body with {{variables}} that a send fills in.

    Attributes:
        id (str): Template identifier. Shape: tpl_<uuid>.
        object_ (str): Always "template".
        name (str): Name given in the console, for example "order_update".
        language (str): Language code, for example "en" or "pt_BR".
        status (None | TemplateStatus): Whether the template may be used for sends.
        body (str): The body, with variables written {{name}}.
        variables (list[TemplateVariable]): The variables the body needs, in order of first use.
        flow (None | TemplateFlow): The form (flow) the template carries; null if it carries none.
        created_at (datetime.datetime | None): Creation time.
        category (None | TemplateCategory): WhatsApp's category of the template: "marketing", "utility" or
            "authentication". A failure 131050 (the recipient stopped marketing
            messages) of a marketing template puts the recipient on the workspace's
            opt-out list.
    """

    id: str
    object_: str
    name: str
    language: str
    status: None | TemplateStatus
    body: str
    variables: list[TemplateVariable]
    flow: None | TemplateFlow
    created_at: datetime.datetime | None
    category: None | TemplateCategory
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        from ..models.template_flow import TemplateFlow

        id = self.id

        object_ = self.object_

        name = self.name

        language = self.language

        status: None | str
        if isinstance(self.status, TemplateStatus):
            status = self.status.value
        else:
            status = self.status

        body = self.body

        variables = []
        for variables_item_data in self.variables:
            variables_item = variables_item_data.to_dict()
            variables.append(variables_item)

        flow: dict[str, Any] | None
        if isinstance(self.flow, TemplateFlow):
            flow = self.flow.to_dict()
        else:
            flow = self.flow

        created_at: None | str
        if isinstance(self.created_at, datetime.datetime):
            created_at = self.created_at.isoformat()
        else:
            created_at = self.created_at

        category: None | str
        if isinstance(self.category, TemplateCategory):
            category = self.category.value
        else:
            category = self.category

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "id": id,
                "object": object_,
                "name": name,
                "language": language,
                "status": status,
                "body": body,
                "variables": variables,
                "flow": flow,
                "created_at": created_at,
                "category": category,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.template_flow import TemplateFlow
        from ..models.template_variable import TemplateVariable

        d = dict(src_dict)
        id = d.pop("id")

        object_ = d.pop("object")

        name = d.pop("name")

        language = d.pop("language")

        def _parse_status(data: object) -> None | TemplateStatus:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                status_type_0 = TemplateStatus(data)

                return status_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TemplateStatus, data)

        status = _parse_status(d.pop("status"))

        body = d.pop("body")

        variables = []
        _variables = d.pop("variables")
        for variables_item_data in _variables:
            variables_item = TemplateVariable.from_dict(variables_item_data)

            variables.append(variables_item)

        def _parse_flow(data: object) -> None | TemplateFlow:
            if data is None:
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                flow_type_0 = TemplateFlow.from_dict(data)

                return flow_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TemplateFlow, data)

        flow = _parse_flow(d.pop("flow"))

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

        def _parse_category(data: object) -> None | TemplateCategory:
            if data is None:
                return data
            try:
                if not isinstance(data, str):
                    raise TypeError()
                category_type_0 = TemplateCategory(data)

                return category_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | TemplateCategory, data)

        category = _parse_category(d.pop("category"))

        template = cls(
            id=id,
            object_=object_,
            name=name,
            language=language,
            status=status,
            body=body,
            variables=variables,
            flow=flow,
            created_at=created_at,
            category=category,
        )

        template.additional_properties = d
        return template

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
