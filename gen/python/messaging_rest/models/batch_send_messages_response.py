from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.batch_send_messages_result import BatchSendMessagesResult


T = TypeVar("T", bound="BatchSendMessagesResponse")


@_attrs_define
class BatchSendMessagesResponse:
    """Response of BatchSendMessages.

    Attributes:
        results (list[BatchSendMessagesResult]): One result per item of the request, in the request's order.
        accepted_count (int): How many items were accepted (results with a message).
        refused_count (int): How many items were refused (results with an error).
    """

    results: list[BatchSendMessagesResult]
    accepted_count: int
    refused_count: int
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        results = []
        for results_item_data in self.results:
            results_item = results_item_data.to_dict()
            results.append(results_item)

        accepted_count = self.accepted_count

        refused_count = self.refused_count

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "results": results,
                "accepted_count": accepted_count,
                "refused_count": refused_count,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.batch_send_messages_result import BatchSendMessagesResult

        d = dict(src_dict)
        results = []
        _results = d.pop("results")
        for results_item_data in _results:
            results_item = BatchSendMessagesResult.from_dict(results_item_data)

            results.append(results_item)

        accepted_count = d.pop("accepted_count")

        refused_count = d.pop("refused_count")

        batch_send_messages_response = cls(
            results=results,
            accepted_count=accepted_count,
            refused_count=refused_count,
        )

        batch_send_messages_response.additional_properties = d
        return batch_send_messages_response

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
