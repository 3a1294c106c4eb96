from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define

from ..types import UNSET, Unset

if TYPE_CHECKING:
    from ..models.send_message_template_flow import SendMessageTemplateFlow
    from ..models.send_message_template_variables import SendMessageTemplateVariables


T = TypeVar("T", bound="SendMessageTemplate")


@_attrs_define
class SendMessageTemplate:
    """The template part of a send.

    Attributes:
        id (None | str | Unset): Template to send. Shape: tpl_<uuid>; active and of the workspace.

            Rules: required; an id such as `tpl_<uuid>`.
        variables (SendMessageTemplateVariables | Unset): Value of each variable the template needs, by variable name:
            every
            required variable present and non-empty, no unknown one; the rendered
            body at most 1024 characters. Each value at most 1024 characters, without
            new lines, tabs or more than four spaces in a row (WhatsApp's rule).

            Rules: each value at most 1024 characters, does not contain new lines, tabs or more than four spaces in a row.
        flow (None | SendMessageTemplateFlow | Unset): Form (flow) parameters; only for a template that carries a flow.
    """

    id: None | str | Unset = UNSET
    variables: SendMessageTemplateVariables | Unset = UNSET
    flow: None | SendMessageTemplateFlow | Unset = UNSET

    def to_dict(self) -> dict[str, Any]:
        from ..models.send_message_template_flow import SendMessageTemplateFlow

        id: None | str | Unset
        if isinstance(self.id, Unset):
            id = UNSET
        else:
            id = self.id

        variables: dict[str, Any] | Unset = UNSET
        if not isinstance(self.variables, Unset):
            variables = self.variables.to_dict()

        flow: dict[str, Any] | None | Unset
        if isinstance(self.flow, Unset):
            flow = UNSET
        elif isinstance(self.flow, SendMessageTemplateFlow):
            flow = self.flow.to_dict()
        else:
            flow = self.flow

        field_dict: dict[str, Any] = {}

        field_dict.update({})
        if id is not UNSET:
            field_dict["id"] = id
        if variables is not UNSET:
            field_dict["variables"] = variables
        if flow is not UNSET:
            field_dict["flow"] = flow

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.send_message_template_flow import SendMessageTemplateFlow
        from ..models.send_message_template_variables import (
            SendMessageTemplateVariables,
        )

        d = dict(src_dict)

        def _parse_id(data: object) -> None | str | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            return cast(None | str | Unset, data)

        id = _parse_id(d.pop("id", UNSET))

        _variables = d.pop("variables", UNSET)
        variables: SendMessageTemplateVariables | Unset
        if isinstance(_variables, Unset):
            variables = UNSET
        else:
            variables = SendMessageTemplateVariables.from_dict(_variables)

        def _parse_flow(data: object) -> None | SendMessageTemplateFlow | Unset:
            if data is None:
                return data
            if isinstance(data, Unset):
                return data
            try:
                if not isinstance(data, dict):
                    raise TypeError()
                flow_type_0 = SendMessageTemplateFlow.from_dict(data)

                return flow_type_0
            except (TypeError, ValueError, AttributeError, KeyError):
                pass
            return cast(None | SendMessageTemplateFlow | Unset, data)

        flow = _parse_flow(d.pop("flow", UNSET))

        send_message_template = cls(
            id=id,
            variables=variables,
            flow=flow,
        )

        return send_message_template
