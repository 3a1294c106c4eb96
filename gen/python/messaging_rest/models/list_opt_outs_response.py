from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

if TYPE_CHECKING:
    from ..models.opt_out import OptOut


T = TypeVar("T", bound="ListOptOutsResponse")


@_attrs_define
class ListOptOutsResponse:
    """List envelope of opt-out entries (spec §List envelope).

    Attributes:
        object_ (str): Always "list".
        data (list[OptOut]): The entries of this page, most recently changed first.
        total (int): Count of all entries matching the request, across pages.
        next_page_token (None | str): Token for the next page; null on the last page.
    """

    object_: str
    data: list[OptOut]
    total: int
    next_page_token: None | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        object_ = self.object_

        data = []
        for data_item_data in self.data:
            data_item = data_item_data.to_dict()
            data.append(data_item)

        total = self.total

        next_page_token: None | str
        next_page_token = self.next_page_token

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "object": object_,
                "data": data,
                "total": total,
                "next_page_token": next_page_token,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        from ..models.opt_out import OptOut

        d = dict(src_dict)
        object_ = d.pop("object")

        data = []
        _data = d.pop("data")
        for data_item_data in _data:
            data_item = OptOut.from_dict(data_item_data)

            data.append(data_item)

        total = d.pop("total")

        def _parse_next_page_token(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        next_page_token = _parse_next_page_token(d.pop("next_page_token"))

        list_opt_outs_response = cls(
            object_=object_,
            data=data,
            total=total,
            next_page_token=next_page_token,
        )

        list_opt_outs_response.additional_properties = d
        return list_opt_outs_response

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
