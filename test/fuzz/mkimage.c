/*
 * mkimage.c
 *	  Writes the model image (model_image.c) of each model file given, for
 *	  the model_image fuzz target's seeds: mkimage OUTDIR MODEL...
 *	  Images depend on the build (IMAGE_VERSION, sizeof(HbNode)), so run.sh
 *	  makes them afresh instead of committing them.
 */
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int
main(int argc, char **argv)
{
	int			written = 0;

	if (argc < 3)
	{
		fprintf(stderr, "usage: mkimage OUTDIR MODEL...\n");
		return 2;
	}
	for (int i = 2; i < argc; i++)
	{
		FILE	   *f = fopen(argv[i], "rb");
		char	   *buf;
		long		n;
		HbModel    *m = NULL;
		HbError		err = {0};
		char	   *image;
		size_t		len;
		char		path[4096];
		const char *base = strrchr(argv[i], '/');

		if (f == NULL)
			continue;
		fseek(f, 0, SEEK_END);
		n = ftell(f);
		fseek(f, 0, SEEK_SET);
		buf = malloc(n > 0 ? n : 1);
		if (buf == NULL || fread(buf, 1, n, f) != (size_t) n)
		{
			fclose(f);
			free(buf);
			continue;
		}
		fclose(f);
		if (hb_model_read(buf, (size_t) n, HB_FORMAT_AUTO, &m, &err) &&
			hb_model_image_write(m, &image, &len, &err))
		{
			snprintf(path, sizeof(path), "%s/%s.img", argv[1], base ? base + 1 : argv[i]);
			f = fopen(path, "wb");
			if (f != NULL)
			{
				if (fwrite(image, 1, len, f) == len)
					written++;
				fclose(f);
			}
			hb_free(image);
		}
		hb_model_free(m);
		free(buf);
	}
	printf("%d images\n", written);
	return written > 0 ? 0 : 1;
}
