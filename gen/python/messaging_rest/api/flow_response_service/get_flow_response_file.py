from http import HTTPStatus
from typing import Any, cast
from urllib.parse import quote

import httpx

from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...types import Response


def _get_kwargs(
    id: str,
    index: int,
) -> dict[str, Any]:

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/flow_responses/{id}/files/{index}".format(
            id=quote(str(id), safe=""),
            index=quote(str(index), safe=""),
        ),
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | str:
    if response.status_code == 200:
        response_200 = cast(str, response.content)
        return response_200

    if response.status_code == 400:
        response_400 = Error.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Error.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Error.from_dict(response.json())

        return response_403

    if response.status_code == 404:
        response_404 = Error.from_dict(response.json())

        return response_404

    if response.status_code == 429:
        response_429 = Error.from_dict(response.json())

        return response_429

    if response.status_code == 500:
        response_500 = Error.from_dict(response.json())

        return response_500

    if response.status_code == 503:
        response_503 = Error.from_dict(response.json())

        return response_503

    response_default = Error.from_dict(response.json())

    return response_default


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Error | str]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    id: str,
    index: int,
    *,
    client: AuthenticatedClient,
) -> Response[Error | str]:
    """Returns the contents of an uploaded file, streamed: over REST the raw bytes with the file's Content-
    Type, Content-Length and a Content-Disposition carrying its file name; over gRPC and Connect a
    stream of google.api.HttpBody chunks, the first carrying the content type.

     Returns the contents of an uploaded file, streamed: over REST the raw
    bytes with the file's Content-Type, Content-Length and a
    Content-Disposition carrying its file name; over gRPC and Connect a stream
    of google.api.HttpBody chunks, the first carrying the content type.
    Unknown id, another workspace's id, an index outside the files array, or
    a file that could not be stored (see FlowResponseFile.error): not_found.
    (Raw bytes are google.api.HttpBody in every API that serves files: the
    public and the console method share it.)

    Scope: `flow_responses:read`.

    Args:
        id (str):
        index (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | str]
    """

    kwargs = _get_kwargs(
        id=id,
        index=index,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    id: str,
    index: int,
    *,
    client: AuthenticatedClient,
) -> Error | str | None:
    """Returns the contents of an uploaded file, streamed: over REST the raw bytes with the file's Content-
    Type, Content-Length and a Content-Disposition carrying its file name; over gRPC and Connect a
    stream of google.api.HttpBody chunks, the first carrying the content type.

     Returns the contents of an uploaded file, streamed: over REST the raw
    bytes with the file's Content-Type, Content-Length and a
    Content-Disposition carrying its file name; over gRPC and Connect a stream
    of google.api.HttpBody chunks, the first carrying the content type.
    Unknown id, another workspace's id, an index outside the files array, or
    a file that could not be stored (see FlowResponseFile.error): not_found.
    (Raw bytes are google.api.HttpBody in every API that serves files: the
    public and the console method share it.)

    Scope: `flow_responses:read`.

    Args:
        id (str):
        index (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | str
    """

    return sync_detailed(
        id=id,
        index=index,
        client=client,
    ).parsed


async def asyncio_detailed(
    id: str,
    index: int,
    *,
    client: AuthenticatedClient,
) -> Response[Error | str]:
    """Returns the contents of an uploaded file, streamed: over REST the raw bytes with the file's Content-
    Type, Content-Length and a Content-Disposition carrying its file name; over gRPC and Connect a
    stream of google.api.HttpBody chunks, the first carrying the content type.

     Returns the contents of an uploaded file, streamed: over REST the raw
    bytes with the file's Content-Type, Content-Length and a
    Content-Disposition carrying its file name; over gRPC and Connect a stream
    of google.api.HttpBody chunks, the first carrying the content type.
    Unknown id, another workspace's id, an index outside the files array, or
    a file that could not be stored (see FlowResponseFile.error): not_found.
    (Raw bytes are google.api.HttpBody in every API that serves files: the
    public and the console method share it.)

    Scope: `flow_responses:read`.

    Args:
        id (str):
        index (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | str]
    """

    kwargs = _get_kwargs(
        id=id,
        index=index,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    id: str,
    index: int,
    *,
    client: AuthenticatedClient,
) -> Error | str | None:
    """Returns the contents of an uploaded file, streamed: over REST the raw bytes with the file's Content-
    Type, Content-Length and a Content-Disposition carrying its file name; over gRPC and Connect a
    stream of google.api.HttpBody chunks, the first carrying the content type.

     Returns the contents of an uploaded file, streamed: over REST the raw
    bytes with the file's Content-Type, Content-Length and a
    Content-Disposition carrying its file name; over gRPC and Connect a stream
    of google.api.HttpBody chunks, the first carrying the content type.
    Unknown id, another workspace's id, an index outside the files array, or
    a file that could not be stored (see FlowResponseFile.error): not_found.
    (Raw bytes are google.api.HttpBody in every API that serves files: the
    public and the console method share it.)

    Scope: `flow_responses:read`.

    Args:
        id (str):
        index (int):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | str
    """

    return (
        await asyncio_detailed(
            id=id,
            index=index,
            client=client,
        )
    ).parsed
