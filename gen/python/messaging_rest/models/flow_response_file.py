from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self, TypeVar, cast

from attrs import define as _attrs_define
from attrs import field as _attrs_field

T = TypeVar("T", bound="FlowResponseFile")


@_attrs_define
class FlowResponseFile:
    """A file uploaded in a form submission.

    Attributes:
        field (str): Form field name (the form's PhotoPicker or DocumentPicker component).
        index (int): Position in the files array, from 0; used in GET .../files/{index}.
        file_name (str): File name as uploaded.
        mime_type (str): Content type, for example "image/jpeg": as the submission states it, else
            guessed from the file name.
        size_bytes (int | None): Size of the stored file in bytes; null when the file could not be stored.
        error (None | str): Why the file could not be stored, as "<reason>: <explanation>" with
            reason file_too_large (over FLOW_FILE_MAX_BYTES), type_not_allowed (not in
            FLOW_FILE_ALLOWED_TYPES) or unreadable (the network could not deliver it,
            or it failed its integrity checks); null when it was stored.
        sha256 (None | str): SHA-256 of the stored bytes, lowercase hex; null when not stored.
    """

    field: str
    index: int
    file_name: str
    mime_type: str
    size_bytes: int | None
    error: None | str
    sha256: None | str
    additional_properties: dict[str, Any] = _attrs_field(init=False, factory=dict)

    def to_dict(self) -> dict[str, Any]:
        field = self.field

        index = self.index

        file_name = self.file_name

        mime_type = self.mime_type

        size_bytes: int | None
        size_bytes = self.size_bytes

        error: None | str
        error = self.error

        sha256: None | str
        sha256 = self.sha256

        field_dict: dict[str, Any] = {}
        field_dict.update(self.additional_properties)
        field_dict.update(
            {
                "field": field,
                "index": index,
                "file_name": file_name,
                "mime_type": mime_type,
                "size_bytes": size_bytes,
                "error": error,
                "sha256": sha256,
            }
        )

        return field_dict

    @classmethod
    def from_dict(cls, src_dict: Mapping[str, Any]) -> Self:
        d = dict(src_dict)
        field = d.pop("field")

        index = d.pop("index")

        file_name = d.pop("file_name")

        mime_type = d.pop("mime_type")

        def _parse_size_bytes(data: object) -> int | None:
            if data is None:
                return data
            return cast(int | None, data)

        size_bytes = _parse_size_bytes(d.pop("size_bytes"))

        def _parse_error(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        error = _parse_error(d.pop("error"))

        def _parse_sha256(data: object) -> None | str:
            if data is None:
                return data
            return cast(None | str, data)

        sha256 = _parse_sha256(d.pop("sha256"))

        flow_response_file = cls(
            field=field,
            index=index,
            file_name=file_name,
            mime_type=mime_type,
            size_bytes=size_bytes,
            error=error,
            sha256=sha256,
        )

        flow_response_file.additional_properties = d
        return flow_response_file

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
